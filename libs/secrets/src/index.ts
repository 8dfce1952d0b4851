// Secrets, in one place: random material (ids, keys), the one-way hash of API keys, and sealing
// at rest (AES-256-GCM under a key from a setting). No I/O, no service knowledge.
export * from "./hash.js";
export * from "./random.js";
export * from "./seal.js";
export * from "./signing-keys.js";
