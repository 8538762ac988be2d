// Package workspace owns an example's fixture workspace: the strict reading
// of a fixture folder beside the agent's physical file (Load: relative, no
// "..", no symbolic link, only regular files and folders, at most MaxFiles
// files and MaxBytes bytes, no credential-shaped content), its content hash
// (part of the revision, so editing the fixture makes earlier results out of
// date), the private scratch copy each example runs in (Materialize), the
// read, search and edit tools VS Code offers, answered for real inside that
// copy only (Workspace.Call), and what changed once the turn is over
// (Workspace.Changes), bounded for the journal.
//
// Every path a tool is given is resolved inside the scratch copy through an
// os.Root: absolute paths, "..", symbolic links (also one swapped in during
// the run) and anything that is not a regular file or folder are refused as
// a tool error the model sees. Results are bounded to MaxResultBytes with a
// truncation note.
//
// Nothing here executes anything: no command, task, build or test runs, and
// "codebase" is a ranked text search, not a semantic one. The user's fixture
// is only ever read, never written; it is read once, into memory, so every
// example's copy is exactly the bytes the hash names.
package workspace
