// Types of fake-llm-server.mjs (a plain JavaScript module shared with bench/llm.js).

export interface FakeRequest {
  api: "openai" | "anthropic";
  /** 0-based arrival order. */
  index: number;
  model: string;
  system: string;
  user: string;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

export interface FakePlan {
  status?: number;
  errorBody?: string;
  errorHeaders?: Record<string, string>;
  text?: string;
  delayMs?: number;
  stall?: boolean;
  hangUp?: boolean;
  chunked?: boolean;
  finish?: "stop" | "length";
  inputTokens?: number;
  outputTokens?: number;
}

export type Planner = (request: FakeRequest) => FakePlan | Promise<FakePlan>;

export function promptLabels(user: string): { n: number; tool: string }[];
export function defaultAnswer(user: string): string;
export function startFakeLlmServer(options?: { plan?: Planner }): Promise<{
  port: number;
  openaiBaseUrl: string;
  anthropicBaseUrl: string;
  requests: FakeRequest[];
  readonly maxActive: number;
  setPlan(next: Planner): void;
  close(): Promise<void>;
}>;
