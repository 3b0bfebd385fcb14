/** The session layer: reading, migrating, indexing, locating, opening and appending to session files. */
export * from "./types.js";
export * from "./reader.js";
export * from "./migrate.js";
export * from "./session.js";
export * from "./open.js";
export * from "./locate.js";
export * from "./writer.js";
