// The kmx editor contract, generated from the Go side (docs/protocol.md).
// Re-exported from one place so every module imports the same generated
// types; nothing here is written by hand.
export * from "../../shared/protocol/kmx-protocol";
