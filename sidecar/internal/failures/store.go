package failures

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/problem"
	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// DirName is the store's folder under the kmx state directory.
const DirName = "eval-failures"

// subjectFile names, inside a subject's folder, the file holding the subject
// path, so a folder named by a hash can still be listed by what it is about.
const subjectFile = "subject"

// recordExt ends every record file name; recordTimeLayout starts it. The
// fixed-width UTC time with nanoseconds makes names sort in creation order.
const (
	recordExt        = ".json"
	recordTimeLayout = "20060102T150405.000000000Z"
	tmpPrefix        = ".tmp-"
)

// Subject resolves the file subject of an agent file path: the checked
// physical parent directory (symlinks resolved) joined with the leaf name as
// the directory spells it. Two paths that reach the same file through
// symlinked folders have the same subject. The leaf itself is not followed:
// a symlinked agent file is its own subject, as the editor shows it. The
// runner freezes this before any model send.
func Subject(path string) (string, error) {
	if path == "" {
		return "", errors.New("no agent file path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	parent, leaf := filepath.Dir(abs), filepath.Base(abs)
	if leaf == "." || leaf == ".." || leaf == string(filepath.Separator) || parent == abs {
		return "", fmt.Errorf("%s names a folder, not an agent file", path)
	}
	phys, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return "", fmt.Errorf("resolve the folder of %s: %w", path, problem.PathReason(err))
	}
	phys, err = filepath.Abs(phys)
	if err != nil {
		return "", fmt.Errorf("resolve the folder of %s: %w", path, err)
	}
	leaf, err = normalLeaf(phys, leaf)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return filepath.Join(phys, leaf), nil
}

// normalLeaf returns leaf as the directory spells it. On a case-insensitive
// filesystem "Greeter.agent.md" and "greeter.agent.md" are one file and must
// be one subject, so the on-disk spelling wins. A missing leaf (a deleted
// file whose records are being explained or cleared) is kept as given.
func normalLeaf(dir, leaf string) (string, error) {
	fi, err := os.Lstat(filepath.Join(dir, leaf))
	if errors.Is(err, fs.ErrNotExist) {
		return leaf, nil
	}
	if err != nil {
		return "", problem.PathReason(err)
	}
	if fi.IsDir() {
		return "", errors.New("it is a folder, not an agent file")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		// The file exists; an unreadable listing only loses the spelling.
		return leaf, nil
	}
	var match string
	for _, e := range entries {
		if e.Name() == leaf {
			return leaf, nil
		}
		if match == "" && strings.EqualFold(e.Name(), leaf) {
			if other, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil && os.SameFile(fi, other) {
				match = e.Name()
			}
		}
	}
	if match != "" {
		return match, nil
	}
	return leaf, nil
}

// subjectDirName names a subject's folder: the hex SHA-256 of the subject,
// so any path maps to one safe, fixed-length folder name.
func subjectDirName(subject string) string {
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:])
}

// RecordsDir is the folder that holds subject's retained records (it may
// not exist): a front with no way to clear them (MCP) names it.
func RecordsDir(stateRoot, subject string) string {
	return filepath.Join(filepath.Clean(stateRoot), DirName, subjectDirName(subject))
}

// Save retains rec. It returns StatusRetained, or StatusUnavailable and the
// reason; it never changes a verdict, so the runner reports the status and
// carries on. More than MaxExamplesPerRecord non-pass examples, a
// credential-shaped value, a record over MaxRecordBytes or an unsafe state
// folder make it unavailable with nothing written.
//
// After writing, Save deletes the subject's oldest records beyond
// MaxRecordsPerSubject. If that fails the new record is still retained, so
// Save returns StatusRetained with an error saying the bound was not
// enforced this time; the next Save tries again.
func Save(stateRoot string, rec Record) (string, error) {
	rec, err := normalize(rec, time.Now())
	if err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: encode: %w", err)
	}
	data = append(data, '\n')
	if len(data) > MaxRecordBytes {
		return StatusUnavailable, fmt.Errorf("retain Test failure: the record is %d bytes, over the %d-byte cap; nothing was retained", len(data), MaxRecordBytes)
	}
	dir, err := state.EnsurePrivateDir(stateRoot, DirName, subjectDirName(rec.Subject))
	if err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	if err := ensureSubjectFile(dir, rec.Subject); err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	if err := checkRecords(dir); err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	suffix, err := randomHex(6)
	if err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	name := rec.RecordedAt.Format(recordTimeLayout) + "-" + suffix + recordExt
	if err := writeAtomic(dir, name, data); err != nil {
		return StatusUnavailable, fmt.Errorf("retain Test failure: %w", err)
	}
	if err := prune(dir, name); err != nil {
		return StatusRetained, fmt.Errorf("retained the Test failure, but could not delete older ones beyond the last %d: %w", MaxRecordsPerSubject, err)
	}
	return StatusRetained, nil
}

// ensureSubjectFile writes the subject file on first use and, after that,
// checks it names the same subject: a mismatch means the folder was tampered
// with (or SHA-256 collided), and records are never mixed across subjects.
func ensureSubjectFile(dir, subject string) error {
	p := filepath.Join(dir, subjectFile)
	got, err := readPrivate(p, 4096)
	if errors.Is(err, fs.ErrNotExist) {
		err = writeAtomic(dir, subjectFile, []byte(subject))
		if err == nil {
			return nil
		}
		// Another Save may have made it first; fall through to check it.
		got, err = readPrivate(p, 4096)
	}
	if err != nil {
		return err
	}
	if string(got) != subject {
		return &state.UnsafeError{Path: p, Problem: "names a different file than its folder is for", Fix: "move the folder " + dir + " aside; kmx will start a new one"}
	}
	return nil
}

// writeAtomic writes data to dir/name so that a reader sees either nothing
// or the whole file, and the name survives a crash: a private temp file in
// the same folder, fsync, rename over, fsync the folder.
func writeAtomic(dir, name string, data []byte) error {
	suffix, err := randomHex(8)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, tmpPrefix+suffix)
	f, err := state.CreatePrivateFile(tmp)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, name))
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), werr)
	}
	return syncDir(dir)
}

// syncDir flushes a folder's entries so a rename or removal is durable.
// Windows cannot open a directory for flushing; NTFS journals its metadata.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flush folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("flush folder %s: %w", dir, err)
	}
	return nil
}

// recordNames lists dir's record files, oldest first.
func recordNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if isRecordName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// isRecordName reports whether name has the shape Save gives records:
// "<UTC time>-<12 hex>.json".
func isRecordName(name string) bool {
	base, ok := strings.CutSuffix(name, recordExt)
	if !ok || len(base) != len(recordTimeLayout)+1+12 || base[len(recordTimeLayout)] != '-' {
		return false
	}
	if _, err := time.Parse(recordTimeLayout, base[:len(recordTimeLayout)]); err != nil {
		return false
	}
	_, err := hex.DecodeString(base[len(recordTimeLayout)+1:])
	return err == nil
}

// checkRecords refuses a subject folder holding a record file that is not
// private: adding to an exposed store would widen what is exposed.
func checkRecords(dir string) error {
	names, err := recordNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := state.CheckPrivateFile(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// prune deletes the oldest records beyond MaxRecordsPerSubject. keep, the
// record just written, is never deleted even if a clock step made its name
// sort first, so its example IDs stay discoverable.
func prune(dir, keep string) error {
	names, err := recordNames(dir)
	if err != nil {
		return err
	}
	extra := len(names) - MaxRecordsPerSubject
	var removed bool
	for _, n := range names {
		if extra <= 0 {
			break
		}
		if n == keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete old record: %w", err)
		}
		removed = true
		extra--
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

// CorruptRecord is a retained record file that could not be read back.
type CorruptRecord struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// CorruptError reports record files Load skipped. Load returns it together
// with the records it could read, so one bad file hides nothing else.
type CorruptError struct {
	Dir     string
	Records []CorruptRecord
}

func (e *CorruptError) Error() string {
	parts := make([]string, len(e.Records))
	for i, r := range e.Records {
		parts[i] = r.Name + ": " + r.Reason
	}
	return fmt.Sprintf("%d retained failure record(s) in %s could not be read (%s); %s", len(e.Records), e.Dir, strings.Join(parts, "; "), e.NextStep())
}

// NextStep is what to do (problem.Problem); Error ends with it.
func (e *CorruptError) NextStep() string {
	return "clear them with kmx test explain --file FILE --clear"
}

// Load returns the subject's retained records, newest first. It only reads:
// a missing store is no records, never created. An unsafe (broader, foreign
// or redirected) folder or file is refused with *state.UnsafeError. Records
// that cannot be decoded strictly are skipped and reported in a
// *CorruptError returned with the readable ones.
func Load(stateRoot, subject string) ([]Record, error) {
	dir, ok, err := subjectDir(stateRoot, subject)
	if err != nil || !ok {
		return nil, err
	}
	names, err := recordNames(dir)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(names))
	var corrupt []CorruptRecord
	for i := len(names) - 1; i >= 0; i-- {
		rec, err := readRecord(filepath.Join(dir, names[i]), subject)
		var unsafe *state.UnsafeError
		switch {
		case errors.As(err, &unsafe):
			return nil, err
		case errors.Is(err, fs.ErrNotExist):
			// Pruned or cleared by another process since the listing.
		case err != nil:
			corrupt = append(corrupt, CorruptRecord{Name: names[i], Reason: err.Error()})
		default:
			recs = append(recs, rec)
		}
	}
	if len(corrupt) > 0 {
		return recs, &CorruptError{Dir: dir, Records: corrupt}
	}
	return recs, nil
}

// subjectDir returns the subject's folder after checking every store folder
// on the way is private; ok is false when any of them does not exist.
func subjectDir(stateRoot, subject string) (dir string, ok bool, err error) {
	if !filepath.IsAbs(stateRoot) {
		return "", false, fmt.Errorf("state root %q is not an absolute path: set KMX_HOME to an absolute folder", stateRoot)
	}
	if subject == "" || !filepath.IsAbs(subject) {
		return "", false, errors.New("the subject is not an absolute path; pass what failures.Subject returned")
	}
	root := filepath.Clean(stateRoot)
	for _, p := range []string{root, filepath.Join(root, DirName), filepath.Join(root, DirName, subjectDirName(subject))} {
		if err := state.CheckReadableDir(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", false, nil
			}
			return "", false, err
		}
		dir = p
	}
	got, err := readPrivate(filepath.Join(dir, subjectFile), 4096)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A Save interrupted before its first record; nothing to read.
		return dir, true, nil
	case err != nil:
		return "", false, err
	case string(got) != subject:
		return "", false, &state.UnsafeError{Path: filepath.Join(dir, subjectFile), Problem: "names a different file than its folder is for", Fix: "move the folder " + dir + " aside; kmx will start a new one"}
	}
	return dir, true, nil
}

// readPrivate reads a private regular file of at most limit bytes; a
// read-only one (0400) is private too.
func readPrivate(p string, limit int64) ([]byte, error) {
	if err := state.CheckReadableFile(p); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Recheck the opened file: the name could have been swapped since Lstat.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if li, err := os.Lstat(p); err != nil || !os.SameFile(fi, li) {
		return nil, &state.UnsafeError{Path: p, Problem: "changed while kmx was opening it", Fix: "run the command again"}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("it is larger than %d bytes", limit)
	}
	return data, nil
}

// readRecord decodes one record strictly: unknown fields, trailing data,
// another schema or subject, or a record Save would not write are refused.
func readRecord(p, subject string) (Record, error) {
	data, err := readPrivate(p, MaxRecordBytes)
	if err != nil {
		return Record{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("not a valid record: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("not a valid record: data after the record")
	}
	if err := validate(rec); err != nil {
		return Record{}, fmt.Errorf("not a valid record: %w", err)
	}
	if rec.Subject != subject {
		return Record{}, errors.New("it is about a different file than its folder")
	}
	return rec, nil
}

// Clear removes the subject's retained records and returns how many record
// files it removed. It is confined to that subject's folder: other subjects,
// journals and anything kmx did not write there are never touched. Left-over
// temp files of an interrupted Save go too; the folder itself is removed
// when nothing else is in it.
func Clear(stateRoot, subject string) (int, error) {
	dir, ok, err := subjectDir(stateRoot, subject)
	if err != nil || !ok {
		return 0, err
	}
	// Removing writes the folder: a read-only one is refused with the step
	// that makes it writable.
	if err := state.CheckPrivateDir(dir); err != nil {
		return 0, fmt.Errorf("clear retained failures: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	removed := 0
	for _, e := range entries {
		name := e.Name()
		isRec := isRecordName(name)
		if !isRec && name != subjectFile && !strings.HasPrefix(name, tmpPrefix) {
			continue
		}
		p := filepath.Join(dir, name)
		if err := state.CheckPrivateFile(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return removed, fmt.Errorf("clear retained failures: %w", err)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("clear retained failures: %w", err)
		}
		if isRec {
			removed++
		}
	}
	if err := syncDir(dir); err != nil {
		return removed, fmt.Errorf("cleared %d record(s) but cannot confirm they are gone: %w", removed, err)
	}
	// Only an empty folder goes; anything else in it is not ours to delete.
	if err := os.Remove(dir); err == nil {
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return removed, fmt.Errorf("cleared %d record(s) but cannot confirm they are gone: %w", removed, err)
		}
	}
	return removed, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	return hex.EncodeToString(b), nil
}
