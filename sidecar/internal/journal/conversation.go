package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

// A conversation journal is a journal that outlives one invocation: every
// turn of one durable conversation is appended to it, by whichever process
// holds its lock at the time. It lives in its own folder, so run retention
// never counts or removes it; it is kept until cleared.
//
// Its family in the conversations folder is K.db (with -wal/-shm), K.lock
// while a process holds it, and K.db-init while it is first built, where K
// is a conversation key (see ValidConversationKey). The same privacy rules
// as run journals apply: private from creation, broader objects refused.

// ErrBusy is matched (errors.Is) when a conversation's lock is held by
// another holder, in this or another process.
var ErrBusy = errors.New("conversation is busy: a turn is running in another window or process")

// ConversationsDir is where the conversation journals of stateRoot live.
func ConversationsDir(stateRoot string) string {
	return filepath.Join(stateRoot, "local-preview", "conversations")
}

// EnsureConversationsDir makes stateRoot, local-preview and conversations
// exist as private directories and returns the conversations folder.
func EnsureConversationsDir(stateRoot string) (string, error) {
	d, err := state.EnsurePrivateDir(stateRoot, "local-preview", "conversations")
	if err != nil {
		return "", fmt.Errorf("prepare the conversation folder: %w", err)
	}
	return d, nil
}

// conversationKeyPrefix starts every conversation key.
const conversationKeyPrefix = "conv-"

// ValidConversationKey reports whether key has the shape the conversation
// package makes ("conv-" and 32 lower-case hex digits), so a key can never
// name a path outside the folder.
func ValidConversationKey(key string) bool {
	if len(key) != len(conversationKeyPrefix)+32 || key[:len(conversationKeyPrefix)] != conversationKeyPrefix {
		return false
	}
	for _, c := range key[len(conversationKeyPrefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// OpenConversation opens the conversation journal key in dir for appending,
// creating it (private from its first instant, built under K.db-init and
// renamed into place) when it does not exist. It takes the conversation's
// OS lock first and holds it until Finish or Close; a lock held elsewhere
// (another process, or another OpenConversation in this one) is ErrBusy.
//
// An existing journal's hash chain is verified whole before anything can be
// appended, and the chain head recorded by the last clean close must still
// be in it (records after it are a process that was killed mid-turn). meta
// is used only when the journal is created. created reports whether it was.
func OpenConversation(ctx context.Context, dir, key string, meta RunMeta) (_ *Journal, created bool, err error) {
	if !ValidConversationKey(key) {
		return nil, false, fmt.Errorf("open conversation: %q is not a conversation key", key)
	}
	meta, err = meta.normalize()
	if err != nil {
		return nil, false, err
	}
	if err := state.CheckPrivateDir(dir); err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	base := filepath.Join(dir, key)
	lock, err := takeConversationLock(base + ".lock")
	if err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	j := &Journal{dir: dir, id: key, dbPath: base + ".db", meta: meta, lock: lock}
	ok := false
	defer func() {
		if !ok {
			_ = j.closeDB()
			_ = releaseLock(lock)
		}
	}()

	_, statErr := os.Lstat(j.dbPath)
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		// Holding the lock, any K.db-init or companion is left by a holder
		// that was killed before the rename: no record can be in it.
		for _, c := range []string{"-init-journal", "-init", "-wal", "-shm", "-journal"} {
			if err := removeChecked(j.dbPath+c, nil); err != nil {
				return nil, false, fmt.Errorf("open conversation: %w", err)
			}
		}
		if err := createSchema(ctx, j.dbPath+"-init", meta, key); err != nil {
			return nil, false, fmt.Errorf("open conversation: %w", err)
		}
		if err := os.Rename(j.dbPath+"-init", j.dbPath); err != nil {
			_ = os.Remove(j.dbPath + "-init")
			return nil, false, fmt.Errorf("open conversation: %w", err)
		}
		created = true
	case statErr != nil:
		return nil, false, fmt.Errorf("open conversation: %w", statErr)
	}
	for _, c := range []string{"", "-wal", "-shm"} {
		if err := state.CheckPrivateFile(j.dbPath + c); err != nil && (c == "" || !errors.Is(err, fs.ErrNotExist)) {
			return nil, false, fmt.Errorf("open conversation: %w", err)
		}
	}
	if j.w, err = openConn(ctx, j.dbPath, writerConn); err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	for _, c := range []string{"-wal", "-shm"} {
		if err := state.CheckPrivateFile(j.dbPath + c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("open conversation: %w", err)
		}
	}
	if err := j.readMeta(ctx, j.w.conn); err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	r, err := j.readerLocked(ctx, "open")
	if err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	if err := j.verifyFromFloor(r); err != nil {
		return nil, false, fmt.Errorf("open conversation: %w", err)
	}
	j.head = headState{known: true, seq: j.chain.seq, hash: j.chain.head}
	j.status = ""
	ok = true
	return j, created, nil
}

// verifyFromFloor verifies the whole chain of a conversation journal just
// opened. The head its last clean close recorded (if any) is a floor, not
// the end: later turns may have been appended since (or be being appended
// now), so the head must be in the chain, not at its end. Afterwards the
// Journal knows no head: a reader accepts records appended after it.
// j.rmu must be held (or the Journal not shared yet); r is the reader.
func (j *Journal) verifyFromFloor(r *dbConn) error {
	j.hmu.Lock()
	headSeq, headHash, hadHead := j.head.seq, j.head.hash, j.head.known
	j.head = headState{}
	j.hmu.Unlock()
	if err := j.extendLocked(r); err != nil {
		return err
	}
	if hadHead && headSeq > 0 && (headSeq > j.chain.seq || j.chain.hashes[headSeq-1] != headHash) {
		return &TamperedError{RunID: j.id, Seq: j.chain.seq,
			Reason: fmt.Sprintf("the journal no longer holds record %d that its last close recorded", headSeq)}
	}
	return nil
}

// ReadConversation opens the conversation journal key in dir for reading
// only, without its lock: a history can be read while a turn is being
// appended by another holder, in this process or another, and the reader
// neither waits for that writer nor makes it wait. SQLite's WAL gives each
// read one snapshot of the committed records; the chain is verified whole
// (the recorded head a floor, as for OpenConversation) and every later read
// re-checks it. A missing journal matches fs.ErrNotExist; nothing is
// created but a missing -wal or -shm companion (private), as for Open.
func ReadConversation(ctx context.Context, dir, key string) (*Journal, error) {
	if !ValidConversationKey(key) {
		return nil, fmt.Errorf("read conversation: %q is not a conversation key", key)
	}
	j, err := openReader(ctx, dir, key)
	if err != nil {
		return nil, fmt.Errorf("read conversation: %w", err)
	}
	j.rmu.Lock()
	r, err := j.readerLocked(ctx, "read")
	if err == nil {
		err = j.verifyFromFloor(r)
	}
	j.rmu.Unlock()
	if err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("read conversation: %w", err)
	}
	return j, nil
}

// ConversationHeld reports whether the conversation key's lock is held, that
// is, whether a turn (or a discard or clear) is under way in this or another
// process. A missing lock file means no holder: a holder removes it while
// still holding it. The probe takes the lock without waiting and drops it at
// once; a writer meeting the probe retries (see takeConversationLock).
func ConversationHeld(dir, key string) (bool, error) {
	if !ValidConversationKey(key) {
		return false, fmt.Errorf("check conversation lock: %q is not a conversation key", key)
	}
	p := filepath.Join(dir, key+".lock")
	if err := state.CheckReadableFile(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("check conversation lock: %w", err)
	}
	f, err := openLockToProbe(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // released between the check and the open
		}
		return false, fmt.Errorf("check conversation lock: %w", err)
	}
	defer f.Close()
	switch err := lockFile(f); {
	case errors.Is(err, errLocked):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("check conversation lock: %w", err)
	}
	if err := unlockFile(f); err != nil {
		return false, fmt.Errorf("check conversation lock: %w", err)
	}
	return false, nil
}

// takeConversationLock opens (or creates, private) the lock file p and locks
// it without waiting. A holder releasing its lock removes the file while
// still holding it; a lock taken on such a removed file is retried. A lock
// found held is tried again a few times over a few milliseconds, so a
// reader's ConversationHeld probe (held for microseconds) is never taken
// for a turn under way; a real holder still answers ErrBusy at once in
// human terms.
func takeConversationLock(p string) (*os.File, error) {
	const heldTries = 4
	const heldPause = 5 * time.Millisecond
	held := 0
	for attempt := 0; attempt < 5+heldTries; attempt++ {
		f, err := state.CreatePrivateFile(p)
		if errors.Is(err, fs.ErrExist) {
			if err = state.CheckPrivateFile(p); err == nil {
				f, err = os.OpenFile(p, os.O_RDWR, 0)
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			_ = f.Close()
			if !errors.Is(err, errLocked) {
				return nil, err
			}
			if held++; held >= heldTries {
				return nil, ErrBusy
			}
			time.Sleep(heldPause)
			continue
		}
		if sameLock(f) != nil {
			_ = unlockFile(f)
			_ = f.Close()
			continue
		}
		return f, nil
	}
	return nil, ErrBusy
}

// ClearConversation removes the conversation journal key from dir. A
// conversation whose lock is held is kept and reported as ErrBusy. A key
// with no files is not an error (there is nothing to clear). Each file is
// checked (private, regular, not a symlink) just before it goes; the lock
// file goes last, and the folder is flushed.
func ClearConversation(dir, key string) (removed bool, err error) {
	if !ValidConversationKey(key) {
		return false, fmt.Errorf("clear conversation: %q is not a conversation key", key)
	}
	if err := state.CheckPrivateDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("clear conversation: %w", err)
	}
	base := filepath.Join(dir, key)
	if _, err := os.Lstat(base + ".db"); errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(base + ".lock"); errors.Is(lerr, fs.ErrNotExist) {
			return false, nil
		}
	}
	lock, err := takeConversationLock(base + ".lock")
	if err != nil {
		return false, fmt.Errorf("clear conversation: %w", err)
	}
	var errs []error
	for _, c := range []string{".db-wal", ".db-shm", ".db-journal", ".db-init-journal", ".db-init", ".db"} {
		if err := removeChecked(base+c, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		_ = unlockFile(lock)
		_ = lock.Close()
		return false, fmt.Errorf("clear conversation: %w", errors.Join(errs...))
	}
	if err := releaseLock(lock); err != nil {
		return true, fmt.Errorf("clear conversation: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return true, fmt.Errorf("clear conversation: removed, but the folder could not be flushed (%v): after a crash the files may still exist", err)
	}
	return true, nil
}
