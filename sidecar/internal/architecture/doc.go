// Package architecture holds no code: its test keeps the sidecar's imports
// to the layers docs/architecture.md draws, reading the table there, so the
// page and the code cannot drift apart.
package architecture
