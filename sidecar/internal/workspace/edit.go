package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// existingMarker is how VS Code's insert_edit_into_file marks unchanged
// code; applying such a sketch needs a model, which kmx does not use here.
const existingMarker = "...existing code..."

func (w *Workspace) createFile(arguments string) (string, error) {
	a, err := decodeArgs(CreateFile, arguments, "filePath", "content")
	if err != nil {
		return "", err
	}
	p, err := a.str("filePath", true)
	if err != nil {
		return "", err
	}
	content, err := a.str("content", true)
	if err != nil {
		return "", err
	}
	r, err := w.resolve(p, true)
	if err != nil {
		return "", err
	}
	if r.info != nil {
		if r.info.IsDir() {
			return "", toolErr("%s is a folder, not a regular file", r.rel)
		}
		return "", toolErr("%s already exists: use edit_editFiles to edit it", r.rel)
	}
	if err := w.mkdirs(path.Dir(r.rel)); err != nil {
		return "", err
	}
	if err := writeNew(w.root, r.rel, []byte(content)); err != nil {
		return "", toolErr("%s could not be created", r.rel)
	}
	return fmt.Sprintf("Created %s (%d bytes).", r.rel, len(content)), nil
}

func (w *Workspace) createDirectory(arguments string) (string, error) {
	a, err := decodeArgs(CreateDirectory, arguments, "dirPath")
	if err != nil {
		return "", err
	}
	p, err := a.str("dirPath", true)
	if err != nil {
		return "", err
	}
	r, err := w.resolve(p, true)
	if err != nil {
		return "", err
	}
	if r.info != nil && !r.info.IsDir() {
		return "", toolErr("%s exists and is not a folder", r.rel)
	}
	if err := w.mkdirs(r.rel); err != nil {
		return "", err
	}
	return "Created the folder " + r.rel + ".", nil
}

// mkdirs creates the folder rel and the missing ones on the way, each
// checked (resolve) so that a link on the way is refused, never followed.
func (w *Workspace) mkdirs(rel string) error {
	if rel == "." {
		return nil
	}
	prefix := ""
	for _, c := range strings.Split(rel, "/") {
		prefix = path.Join(prefix, c)
		r, err := w.resolve(prefix, false)
		if err != nil {
			return err
		}
		switch {
		case r.info == nil:
			if err := w.root.Mkdir(prefix, 0o700); err != nil {
				return toolErr("the folder %s could not be created", prefix)
			}
		case !r.info.IsDir():
			return toolErr("%s is not a folder", prefix)
		}
	}
	return nil
}

// editTarget resolves an existing regular file to edit and reads it.
func (w *Workspace) editTarget(p string) (resolved, string, error) {
	r, err := w.resolve(p, false)
	if err != nil {
		return resolved{}, "", err
	}
	switch {
	case r.info == nil:
		return resolved{}, "", toolErr("%s does not exist in the workspace: use create_file for a new file", r.rel)
	case !r.info.Mode().IsRegular():
		return resolved{}, "", toolErr("%s is not a regular file: only files can be edited", r.rel)
	}
	text, err := w.readText(r)
	return r, text, err
}

// replaceOnce replaces the one occurrence of old in text.
func replaceOnce(rel, text, old, new string) (string, error) {
	if old == "" {
		return "", toolErr("oldString is empty: give the exact text to replace")
	}
	switch n := strings.Count(text, old); {
	case n == 0:
		return "", toolErr("oldString was not found in %s: copy it exactly, with its whitespace and line breaks", rel)
	case n > 1:
		return "", toolErr("oldString occurs %d times in %s: include more surrounding lines so that it occurs once", n, rel)
	}
	return strings.Replace(text, old, new, 1), nil
}

func (w *Workspace) replaceString(arguments string) (string, error) {
	a, err := decodeArgs(ReplaceString, arguments, "filePath", "oldString", "newString", "explanation")
	if err != nil {
		return "", err
	}
	p, err := a.str("filePath", true)
	if err != nil {
		return "", err
	}
	old, err := a.str("oldString", true)
	if err != nil {
		return "", err
	}
	repl, err := a.str("newString", true)
	if err != nil {
		return "", err
	}
	if _, err := a.str("explanation", false); err != nil {
		return "", err
	}
	r, text, err := w.editTarget(p)
	if err != nil {
		return "", err
	}
	out, err := replaceOnce(r.rel, text, old, repl)
	if err != nil {
		return "", err
	}
	if err := w.replaceFile(r.rel, out); err != nil {
		return "", err
	}
	return "Edited " + r.rel + ".", nil
}

// multiReplace applies every replacement or none: each is checked against
// the text the earlier ones leave, and only then are the files written.
func (w *Workspace) multiReplace(arguments string) (string, error) {
	a, err := decodeArgs(MultiReplace, arguments, "explanation", "replacements")
	if err != nil {
		return "", err
	}
	if _, err := a.str("explanation", false); err != nil {
		return "", err
	}
	if !a.has("replacements") {
		return "", toolErr("%s needs %q (a list)", MultiReplace, "replacements")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(a.m["replacements"], &items); err != nil || len(items) == 0 {
		return "", toolErr("replacements must be a non-empty list of {filePath, oldString, newString}")
	}
	texts := map[string]string{}
	var order []string
	for i, raw := range items {
		ia, err := decodeArgs(fmt.Sprintf("replacement %d", i+1), string(raw), "filePath", "oldString", "newString", "explanation")
		if err != nil {
			return "", err
		}
		p, err := ia.str("filePath", true)
		if err != nil {
			return "", err
		}
		old, err := ia.str("oldString", true)
		if err != nil {
			return "", err
		}
		repl, err := ia.str("newString", true)
		if err != nil {
			return "", err
		}
		if _, err := ia.str("explanation", false); err != nil {
			return "", err
		}
		r, err := w.resolve(p, false)
		if err != nil {
			return "", err
		}
		text, seen := texts[r.rel]
		if !seen {
			if _, text, err = w.editTarget(p); err != nil {
				return "", err
			}
			order = append(order, r.rel)
		}
		out, err := replaceOnce(r.rel, text, old, repl)
		if err != nil {
			return "", toolErr("replacement %d: %v (nothing was changed)", i+1, err)
		}
		texts[r.rel] = out
	}
	for _, rel := range order {
		if err := w.replaceFile(rel, texts[rel]); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("Applied %d replacements in %s.", len(items), strings.Join(order, ", ")), nil
}

// insertEdit takes code as the file's whole new content. VS Code applies a
// sketch with "...existing code..." markers through a model; kmx applies
// nothing it would have to guess, so such a sketch is a tool error.
func (w *Workspace) insertEdit(arguments string) (string, error) {
	a, err := decodeArgs(InsertEdit, arguments, "explanation", "filePath", "code")
	if err != nil {
		return "", err
	}
	if _, err := a.str("explanation", false); err != nil {
		return "", err
	}
	p, err := a.str("filePath", true)
	if err != nil {
		return "", err
	}
	code, err := a.str("code", true)
	if err != nil {
		return "", err
	}
	if strings.Contains(code, existingMarker) {
		return "", toolErr("kmx's test workspace does not expand %q markers: give the whole new content of the file, or use edit_editFiles", existingMarker)
	}
	r, _, err := w.editTarget(p)
	if err != nil {
		return "", err
	}
	if err := w.replaceFile(r.rel, code); err != nil {
		return "", err
	}
	return "Edited " + r.rel + ".", nil
}

// replaceFile writes text to the existing regular file rel through a new
// file beside it and a rename, so the file is either the old or the new
// bytes, and a link swapped in at rel is replaced, never followed.
func (w *Workspace) replaceFile(rel, text string) error {
	r, err := w.resolve(rel, false)
	if err != nil {
		return err
	}
	if r.info == nil || !r.info.Mode().IsRegular() {
		return toolErr("%s is not a regular file: only files can be edited", rel)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("name a temporary file: %w", err)
	}
	tmp := path.Join(path.Dir(rel), ".kmx-edit-"+hex.EncodeToString(b[:]))
	if err := writeNew(w.root, tmp, []byte(text)); err != nil {
		_ = w.root.Remove(tmp)
		return toolErr("%s could not be written", rel)
	}
	if err := w.root.Rename(tmp, rel); err != nil {
		_ = w.root.Remove(tmp)
		return toolErr("%s could not be written", rel)
	}
	return nil
}
