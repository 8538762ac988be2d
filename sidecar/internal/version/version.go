// Package version holds the kmx release string, shared by the CLI, the
// journals it writes and the servers it runs. It holds nothing else.
package version

// Version is the kmx release; the sidecar and the extension share it.
const Version = "0.1.0"
