// Package journal owns kmx's run journals: one private SQLite file per
// invocation under <state>/local-preview/journals, a hash-chained table of
// records that every turn writes, and the OS lock that marks a run as still
// executing. It is the only package in kmx that imports database/sql.
//
// It also owns which runs are kept (Retain, Clear, List: the newest
// KeepRuns, never one whose lock is held) and removes nothing in the folder
// but a run's own file family.
//
// It never interprets a turn (the Sessions client decides what a complete,
// replayable turn is) and never stores a credential: callers refuse
// credential-bearing content before a journal is created.
//
// Durability: records are committed in WAL mode with synchronous=NORMAL, so a
// killed process (kill -9, a crash) loses no record whose Append returned.
// Power loss or an OS crash may lose the last records; that is not certified.
package journal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/state"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Label is the label every run carries.
const Label = "local preview"

// StoreVersion is the version of the journal's table layout (meta and
// records), distinct from SchemaVersion, the version of record payloads.
const StoreVersion = 1

// Run statuses recorded by Finish.
const (
	StatusFinished  = "finished"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed"
)

// pageSize is chosen for bytes per turn: see docs/benchmarks.md "Journal".
const pageSize = 4096

// maxPayload bounds one record; the largest legitimate payloads (a 1 MiB
// model reply plus the agent's instructions) stay well below it.
const maxPayload = 8 << 20

// RunMeta describes the invocation a journal belongs to.
type RunMeta struct {
	KmxVersion    string
	AgentID       string
	AgentRevision string
	Command       string // "run" or "test" (or another lower-case command name)
	Label         string // always Label; empty means Label
	// AgentPath is the agent file the run was of, as PathKey makes it
	// (absolute, symlinks resolved): two files with the same name in
	// different folders are one agent ID but two agents. Empty for a run
	// of no file on disk, and in journals kmx wrote before it recorded
	// paths.
	AgentPath string
}

func (m RunMeta) normalize() (RunMeta, error) {
	if m.Label == "" {
		m.Label = Label
	}
	if m.Label != Label {
		return m, fmt.Errorf("journal label is %q: every run is labeled %q", m.Label, Label)
	}
	if m.KmxVersion == "" || m.AgentID == "" || m.AgentRevision == "" {
		return m, fmt.Errorf("journal meta needs the kmx version, agent ID and agent revision (got %q, %q, %q)", m.KmxVersion, m.AgentID, m.AgentRevision)
	}
	if m.Command == "" || strings.Trim(m.Command, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return m, fmt.Errorf("journal command is %q: use a lower-case command name such as \"run\" or \"test\"", m.Command)
	}
	return m, nil
}

// Record is one journal entry. Seq is assigned by Append and ignored on input.
type Record struct {
	Seq       int64
	SessionID string
	Turn      int
	Kind      Kind
	Version   int
	Payload   []byte
}

func (r Record) validate() error {
	switch {
	case r.SessionID == "":
		return errors.New("journal record has no session ID")
	case r.Kind == "":
		return errors.New("journal record has no kind")
	case r.Turn < 0:
		return fmt.Errorf("journal record %s has negative turn %d", r.Kind, r.Turn)
	case r.Version < 1:
		return fmt.Errorf("journal record %s has version %d: versions start at 1", r.Kind, r.Version)
	case len(r.Payload) > maxPayload:
		return fmt.Errorf("journal record %s is %d bytes, over the %d-byte limit", r.Kind, len(r.Payload), maxPayload)
	}
	return nil
}

// ErrTampered is matched (errors.Is) by every broken-chain error. Callers
// treat it as "not a pass", never as a pass with a warning.
var ErrTampered = errors.New("journal hash chain is broken")

// ErrClosed is returned by a Journal after Finish or Close.
var ErrClosed = errors.New("journal is closed")

// errLocked is what lockFile returns when another holder has the lock.
var errLocked = errors.New("run lock is held")

// TamperedError says where the chain broke.
type TamperedError struct {
	RunID  string
	Seq    int64
	Reason string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("journal %s was altered at record %d (%s): its records cannot be trusted", e.RunID, e.Seq, e.Reason)
}

// NextStep is what to do with an altered journal (problem.Problem): its
// records are never used, so the run can only be removed.
func (e *TamperedError) NextStep() string {
	return "clear it with kmx journal clear " + e.RunID + "; nothing in it can be shown as journaled"
}

// Is makes errors.Is(err, ErrTampered) true.
func (e *TamperedError) Is(target error) bool { return target == ErrTampered }

// Hash is the chain hash of r after the record whose hash is prev (all zero
// for the first record). Every field is length-prefixed or fixed-width, so
// no two different records hash the same input.
func Hash(prev [32]byte, r Record) [32]byte {
	return sha256.Sum256(appendHashInput(nil, prev, r))
}

// Journal is one run's journal, either being written (Create) or retained
// and opened for reading (Open). Its methods are safe for concurrent use.
//
// A Journal being written has up to three connections to its database: the
// writer, which commits (under mu); the reader, on which verification reads
// the records back while a commit is in progress (under rmu, reader.go);
// and the checkpointer, which copies the WAL into the database beside the
// writer (under cmu, checkpoint.go). A Journal opened for reading has the
// reader only. Lock order: mu, then rmu, then cmu, then hmu.
type Journal struct {
	dir, id, dbPath string
	meta            RunMeta
	status          string // as read by Open; "" while running or after a crash
	readOnly        bool

	// qmu guards queue, the appends waiting for the next group commit, and
	// committing, whether a leader is committing a group now.
	qmu        sync.Mutex
	queue      []*appendReq
	committing bool

	// mu guards the writer side: w, lock, closed, createdDB.
	mu sync.Mutex
	// w is the writing connection (nil for a Journal opened for reading).
	w      *dbConn
	lock   *os.File // held while the run executes; nil for Open
	closed bool
	// createdDB: Create renamed the database into place (so a failed Create
	// removes it).
	createdDB bool
	// sinceCk counts commits since the last checkpoint was started.
	sinceCk int

	// ckwg counts the checkpoints started and not finished (checkpoint.go);
	// Add is called under mu, Wait under mu.
	ckwg sync.WaitGroup
	// cmu guards the checkpoint connection ck and ckClosed.
	cmu      sync.Mutex
	ck       *dbConn
	ckClosed bool

	// hmu guards head. head is written with both mu and hmu held (so the
	// writer may read it under mu alone) and read by readers under hmu.
	hmu  sync.Mutex
	head headState

	// rmu guards the reader side: r, rclosed, chain.
	rmu sync.Mutex
	// r is the reading connection: opened on the first read of a Journal
	// being written, at Open for one opened for reading.
	r       *dbConn
	rclosed bool
	// chain is the prefix of the chain verified from disk so far.
	chain chainState
}

// headState is the end of the chain as this Journal knows it without
// reading the database: the last record it committed (Create, and a
// conversation opened for appending), or the head Finish recorded (Open of
// a finished run); known is false otherwise.
type headState struct {
	known bool
	seq   int64
	hash  [32]byte
	// pendSeq and pendHash are the end of the group being committed (pendSeq
	// 0 when none): a reader may see it committed before the writer makes it
	// the head.
	pendSeq  int64
	pendHash [32]byte
}

// Dir is where the journals of the state folder stateRoot live.
func Dir(stateRoot string) string {
	return filepath.Join(stateRoot, "local-preview", "journals")
}

// EnsureDir makes stateRoot, local-preview and journals exist as private
// directories (see state.EnsurePrivateDir) and returns the journals folder.
// Call it before Create: Create only checks the folder it is given.
func EnsureDir(stateRoot string) (string, error) {
	d, err := state.EnsurePrivateDir(stateRoot, "local-preview", "journals")
	if err != nil {
		return "", fmt.Errorf("prepare the journal folder: %w", err)
	}
	return d, nil
}

// Create starts a new run journal in dir, which must already be a private
// directory (EnsureDir makes it one; t.TempDir() already is). It takes the
// run's OS lock before the database exists, creates the database private
// from its first instant, and records meta with the store version.
func Create(ctx context.Context, dir string, meta RunMeta) (*Journal, error) {
	meta, err := meta.normalize()
	if err != nil {
		return nil, err
	}
	if err := state.CheckPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	id, err := newRunID(time.Now())
	if err != nil {
		return nil, err
	}
	j := &Journal{dir: dir, id: id, dbPath: filepath.Join(dir, id+".db"), meta: meta}
	ok := false
	defer func() {
		if !ok {
			j.abandon()
		}
	}()

	j.lock, err = state.CreatePrivateFile(filepath.Join(dir, id+".lock"))
	if err != nil {
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	if err := lockFile(j.lock); err != nil {
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	// A clear may have removed the lock file between its creation and the
	// lock; running on with an unlinked lock would leave the run unguarded.
	if err := sameLock(j.lock); err != nil {
		return nil, fmt.Errorf("create journal %s: its lock file was removed while the run was starting; start the run again: %w", id, err)
	}
	// A companion that exists before the database does was not made by
	// SQLite for this run; opening it could adopt foreign content.
	for _, c := range []string{"", "-wal", "-shm", "-journal", "-init", "-init-journal"} {
		if _, err := os.Lstat(j.dbPath + c); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("create journal %s: %s%s already exists; move it aside", id, j.dbPath, c)
		}
	}
	// The schema is built under R.db-init and renamed into place, so R.db
	// exists only as a complete, openable journal: a run killed before the
	// rename leaves R.db-init, which List shows as partial and Clear and
	// retention remove.
	if err := createSchema(ctx, j.dbPath+"-init", j.meta, j.id); err != nil {
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	if err := os.Rename(j.dbPath+"-init", j.dbPath); err != nil {
		_ = os.Remove(j.dbPath + "-init")
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	j.createdDB = true
	if j.w, err = openConn(ctx, j.dbPath, writerConn); err != nil {
		return nil, fmt.Errorf("create journal %s: %w", id, err)
	}
	// SQLite gives -wal and -shm the database's mode; check rather than trust.
	for _, c := range []string{"-wal", "-shm"} {
		if err := state.CheckPrivateFile(j.dbPath + c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("create journal %s: %w", id, err)
		}
	}
	j.head.known = true
	ok = true
	return j, nil
}

// createSchema creates the private database file path and writes the schema
// and meta in one rollback-journal transaction, then closes it. Create
// renames the result into place.
func createSchema(ctx context.Context, path string, meta RunMeta, id string) (err error) {
	f, err := state.CreatePrivateFile(path)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path + "-journal")
			_ = os.Remove(path)
		}
	}()
	db, err := openInitDB(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("write schema: %w", cerr)
		}
	}()
	j := &Journal{id: id, meta: meta}
	return j.initSchema(ctx, db)
}

func (j *Journal) initSchema(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write schema: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmts := []string{
		`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE records (
			seq INTEGER PRIMARY KEY,
			session_id TEXT NOT NULL,
			turn INTEGER NOT NULL,
			kind TEXT NOT NULL,
			version INTEGER NOT NULL,
			payload BLOB NOT NULL,
			prev_hash BLOB NOT NULL,
			hash BLOB NOT NULL)`,
		// No index on session_id: reading a session back is a range of
		// the rowid from its first record (chainState.firsts), and an index
		// made every append write a second B-tree (its commits cost ~27 %
		// more CPU and ~40 % more time). Journals written before keep
		// theirs; the same queries read both.
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("write schema: %w", err)
		}
	}
	kv := [][2]string{
		{"store_version", strconv.Itoa(StoreVersion)},
		{"run_id", j.id},
		{"label", j.meta.Label},
		{"kmx_version", j.meta.KmxVersion},
		{"agent_id", j.meta.AgentID},
		{"agent_revision", j.meta.AgentRevision},
		{"command", j.meta.Command},
	}
	if j.meta.AgentPath != "" {
		kv = append(kv, [2]string{"agent_path", j.meta.AgentPath})
	}
	for _, p := range kv {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)`, p[0], p[1]); err != nil {
			return fmt.Errorf("write meta: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write schema: %w", err)
	}
	return nil
}

// openInitDB opens the new, empty database Create builds the schema in,
// with the journal's page size and a rollback journal (WAL is switched on
// when the finished file is opened under its own name).
func openInitDB(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", "page_size("+strconv.Itoa(pageSize)+")")
	q.Set("_journal_mode", "DELETE")
	q.Set("_synchronous", "NORMAL")
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// connRole is what a connection of a Journal is for; it decides the
// pragmas openDB sets.
type connRole int

const (
	// writerConn commits a run: WAL, synchronous=NORMAL, a small page cache.
	writerConn connRole = iota
	// readerConn reads a running Journal's records back beside its writer:
	// read-only, a small page cache.
	readerConn
	// checkpointConn runs the checkpoints beside the writer
	// (checkpoint.go): synchronous=NORMAL, as the writer's, a small cache.
	checkpointConn
	// openedConn reads a retained journal (Open, ReadConversation):
	// read-only, SQLite's default page cache.
	openedConn
	// immutableConn reads a retained journal in a read-only folder from the
	// database file alone (mode=ro, immutable): no companion, no lock.
	immutableConn
)

// openDB opens an existing database file (mode=rw never creates one) on a
// single connection, so the pragmas below hold for every statement and the
// chain is written in one order.
func openDB(path string, role connRole) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Set("_busy_timeout", "5000")
	switch role {
	case writerConn:
		q.Add("_pragma", "page_size("+strconv.Itoa(pageSize)+")")
		q.Set("_journal_mode", "WAL")
		// A 256 KiB page cache instead of SQLite's 2 MB default: a run
		// appends at the end of the table and its index, so its hot pages
		// are few; the default cache filled up over a 2,000-example run
		// and was most of kmx test's memory beyond the Go heap
		// (docs/benchmarks.md, "Runner").
		q.Add("_pragma", "cache_size(-256)")
		q.Set("_synchronous", "NORMAL")
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(ckBackstopPages)+")")
	case checkpointConn:
		q.Add("_pragma", "cache_size("+strconv.Itoa(-readerCacheKiB)+")")
		q.Set("_synchronous", "NORMAL")
	case immutableConn:
		q.Set("mode", "ro")
		q.Set("immutable", "1")
	case readerConn:
		q.Set("_query_only", "1")
		q.Add("_pragma", "cache_size("+strconv.Itoa(-readerCacheKiB)+")")
	default:
		q.Set("_query_only", "1")
	}
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	dsn := (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	if err := db.Ping(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// openConn opens the database at path for role (see openDB) and takes its
// one connection.
func openConn(ctx context.Context, path string, role connRole) (*dbConn, error) {
	db, err := openDB(path, role)
	if err != nil {
		return nil, err
	}
	return newDBConn(ctx, db)
}

// closeDB closes both connections (reader first). Both locks must be held,
// or the Journal must not be shared yet.
func (j *Journal) closeDB() error {
	err := errors.Join(j.r.close(), j.w.close())
	j.r, j.w = nil, nil
	return err
}

// abandon undoes a Create that failed: nothing was recorded, so nothing is
// kept.
func (j *Journal) abandon() {
	_ = j.closeDB()
	// Only files this Create made: the database exists under its own name
	// only after the rename (createSchema cleans up after itself before).
	if j.createdDB {
		for _, c := range []string{"-wal", "-shm", "-journal"} {
			_ = os.Remove(j.dbPath + c)
		}
		_ = os.Remove(j.dbPath)
	}
	if j.lock != nil {
		_ = releaseLock(j.lock)
	}
	j.closed, j.rclosed = true, true
}

// newRunID is the UTC time with nanoseconds (fixed width, so names sort in
// creation order) and 8 random hex digits.
func newRunID(now time.Time) (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a run ID: %w", err)
	}
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:]), nil
}

// ValidRunID reports whether id has the exact shape Create makes, so an ID
// from a user or a file name can never reach outside the journal folder.
func ValidRunID(id string) bool {
	const shape = "dddddddd" + "T" + "dddddd" + "." + "ddddddddd" + "Z-" + "hhhhhhhh"
	if len(id) != len(shape) {
		return false
	}
	for i := 0; i < len(shape); i++ {
		c := id[i]
		switch shape[i] {
		case 'd':
			if c < '0' || c > '9' {
				return false
			}
		case 'h':
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		default:
			if c != shape[i] {
				return false
			}
		}
	}
	return true
}

// ID is the run ID: the journal's file name without ".db".
func (j *Journal) ID() string { return j.id }

// Path is the database file.
func (j *Journal) Path() string { return j.dbPath }

// Meta is the run's meta as created or as read by Open.
func (j *Journal) Meta() RunMeta { return j.meta }

// Status is the status Finish recorded, as read by Open: "" for a journal
// being written, or one whose run never finished (still running or crashed).
func (j *Journal) Status() string { return j.status }

// Append commits r as the next record and returns its sequence number. The
// record is durable against a process kill when Append returns.
//
// Appends from several goroutines (concurrent examples) are group-committed:
// while one commit is in progress, the appends that arrive queue up, and the
// first of them leads the next group: it commits every queued record in one
// transaction, in arrival order, and wakes the others of its group. Each
// Append still returns only after its own record is committed; an Append
// alone is one single-row commit as before.
func (j *Journal) Append(ctx context.Context, r Record) (int64, error) {
	seqs, err := j.AppendAll(ctx, []Record{r})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// AppendAll commits recs as consecutive records in one transaction and
// returns their sequence numbers: all of them are durable against a process
// kill when it returns, or none was written.
func (j *Journal) AppendAll(ctx context.Context, recs []Record) ([]int64, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	req := &appendReq{ctx: ctx, recs: make([]Record, len(recs)), wake: make(chan struct{})}
	for i, r := range recs {
		if err := r.validate(); err != nil {
			return nil, err
		}
		if r.Payload == nil {
			r.Payload = []byte{} // NULL is not a payload
		}
		req.recs[i] = r
	}
	j.qmu.Lock()
	j.queue = append(j.queue, req)
	if j.committing {
		// A group is being committed: wait for the group this request
		// joins to be committed by its leader, or to become the leader.
		j.qmu.Unlock()
		<-req.wake
		if !req.lead {
			return req.seqs, req.err
		}
		j.qmu.Lock()
	}
	// This goroutine leads: it commits everything queued so far, its own
	// request included.
	j.committing = true
	batch := j.queue
	j.queue = nil
	j.qmu.Unlock()

	j.mu.Lock()
	ck := j.commitLocked(batch) && j.countCommitLocked()
	j.mu.Unlock()
	if ck {
		j.startCheckpoint()
	}

	// The first request that queued meanwhile leads the next group; the
	// others of this group return. Neither waits for the journal's lock
	// to learn its result.
	j.qmu.Lock()
	if len(j.queue) > 0 {
		next := j.queue[0]
		next.lead = true
		close(next.wake)
	} else {
		j.committing = false
	}
	j.qmu.Unlock()
	for _, r := range batch {
		if r != req {
			close(r.wake)
		}
	}
	return req.seqs, req.err
}

// appendReq is one AppendAll call waiting for its group commit. The leader
// writes its result fields, or sets lead, before it closes wake; the caller
// reads them after wake is closed.
type appendReq struct {
	ctx  context.Context
	recs []Record
	// wake is closed when the request's group was committed (seqs, err)
	// or, with lead set, when the request is to lead the next group.
	wake chan struct{}
	lead bool
	seqs []int64
	err  error
}

// commitLocked commits the requests of one group in one transaction (a
// lone single record in one autocommit INSERT) and sets each one's result. A
// request whose context has already ended is not written. It reports whether
// anything was committed. j.mu must be held.
func (j *Journal) commitLocked(batch []*appendReq) bool {
	var live []*appendReq
	for _, req := range batch {
		switch {
		case j.closed:
			req.err = fmt.Errorf("append to journal %s: %w", j.id, ErrClosed)
		case j.readOnly:
			req.err = fmt.Errorf("append to journal %s: it was opened for reading", j.id)
		case req.ctx.Err() != nil:
			req.err = fmt.Errorf("append %s record to journal %s: %w", req.recs[0].Kind, j.id, req.ctx.Err())
		default:
			live = append(live, req)
		}
	}
	if len(live) == 0 {
		return false
	}
	// Number and hash every record of the group in order.
	seq, head := j.head.seq, j.head.hash
	var rows []pendingRow
	for _, req := range live {
		req.seqs = make([]int64, len(req.recs))
		for i, r := range req.recs {
			seq++
			r.Seq = seq
			h := j.w.hash(head, r)
			rows = append(rows, pendingRow{r: r, prev: head, hash: h})
			req.seqs[i] = seq
			head = h
		}
	}
	// Readers may see the group committed before it becomes the head.
	j.hmu.Lock()
	j.head.pendSeq, j.head.pendHash = seq, head
	j.hmu.Unlock()
	// A group is never cut short by one caller's cancellation: its other
	// records belong to callers still waiting for them (see raw.go).
	err := j.w.raw(func(c driver.Conn) error { return j.w.insertRows(c, rows) })
	ok := err == nil || j.committed(seq, head)
	j.hmu.Lock()
	if ok {
		j.head.seq, j.head.hash = seq, head
	}
	j.head.pendSeq, j.head.pendHash = 0, [32]byte{}
	j.hmu.Unlock()
	if !ok {
		for _, req := range live {
			req.seqs = nil
			req.err = fmt.Errorf("append %s record to journal %s: %w", req.recs[0].Kind, j.id, err)
		}
	}
	return ok
}

// committed reports whether the record (seq, h) is in the database after an
// Append error: a cancellation can race with a commit that already happened,
// and the chain head must follow what is on disk. j.mu must be held.
func (j *Journal) committed(seq int64, h [32]byte) bool {
	var got []byte
	err := j.w.conn.QueryRowContext(context.Background(), `SELECT hash FROM records WHERE seq = ?`, seq).Scan(&got)
	return err == nil && string(got) == string(h[:])
}

// Finish records the run's status ("finished", "cancelled" or "failed") and
// the chain head, checkpoints the WAL into the database, closes it, and
// releases and removes the run lock. It writes even when ctx is already
// cancelled: recording that a run was cancelled is the point. The Journal is
// closed afterwards whether or not Finish succeeded.
func (j *Journal) Finish(ctx context.Context, status string) error {
	lock, err := j.finish(ctx, status)
	if lock != nil {
		err = errors.Join(err, releaseLock(lock))
	}
	if err != nil {
		return fmt.Errorf("finish journal %s: %w", j.id, err)
	}
	return nil
}

// FinishHeld is Finish that keeps the run's lock held when it succeeds:
// the run's status and records are final and its database is closed, but
// the run still counts as executing (retention, in this or another
// process, never deletes it; kmx journal list shows it running) until
// release is called. An invocation over several files finishes each file's
// run this way and releases them all when it ends, so it never deletes a
// run it reported. When FinishHeld fails, the lock is released as Finish
// releases it, and release is nil. release is safe to call more than once.
func (j *Journal) FinishHeld(ctx context.Context, status string) (release func() error, err error) {
	lock, err := j.finish(ctx, status)
	if err != nil {
		if lock != nil {
			err = errors.Join(err, releaseLock(lock))
		}
		return nil, fmt.Errorf("finish journal %s: %w", j.id, err)
	}
	if lock == nil {
		return func() error { return nil }, nil
	}
	var once sync.Once
	var relErr error
	return func() error {
		once.Do(func() { relErr = releaseLock(lock) })
		return relErr
	}, nil
}

// finish is Finish up to releasing the lock, which it returns still held
// (nil when the Journal holds none).
func (j *Journal) finish(ctx context.Context, status string) (*os.File, error) {
	switch status {
	case StatusFinished, StatusCancelled, StatusFailed:
	default:
		return nil, fmt.Errorf("status %q is not one of %q, %q, %q", status, StatusFinished, StatusCancelled, StatusFailed)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, ErrClosed
	}
	if j.readOnly {
		return nil, errors.New("it was opened for reading")
	}
	j.rmu.Lock()
	defer j.rmu.Unlock()
	// The reader and the checkpointer go first: neither can then hold
	// back the checkpoint below.
	j.rclosed = true
	readerErr := errors.Join(j.r.close(), j.closeCheckpointerLocked())
	j.r = nil
	ctx = context.WithoutCancel(ctx)
	err := j.writeHead(ctx, status)
	if err == nil {
		// TRUNCATE leaves a zero-length WAL, so the retained journal is one
		// self-contained file even before the connection closes.
		var busy, logFrames, done int
		err = j.w.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done)
		if err == nil && busy != 0 {
			err = errors.New("the checkpoint was blocked")
		}
	}
	lock, closeErr := j.closeKeepingLock()
	return lock, errors.Join(err, readerErr, closeErr)
}

func (j *Journal) writeHead(ctx context.Context, status string) error {
	tx, err := j.w.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	kv := [][2]string{
		{"status", status},
		{"finished_at", time.Now().UTC().Format(time.RFC3339Nano)},
		{"head_seq", strconv.FormatInt(j.head.seq, 10)},
		{"head_hash", hex.EncodeToString(j.head.hash[:])},
	}
	for _, p := range kv {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, p[0], p[1]); err != nil {
			return fmt.Errorf("record status: %w", err)
		}
	}
	return tx.Commit()
}

// Close releases the journal without recording a status (an error path, or
// a journal opened for reading). It is idempotent and safe after Finish. A
// run closed this way looks like a crashed one: no status, no lock.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.rmu.Lock()
	defer j.rmu.Unlock()
	if err := j.closeLocked(); err != nil {
		return fmt.Errorf("close journal %s: %w", j.id, err)
	}
	return nil
}

// closeLocked closes both connections and releases the lock. j.mu and j.rmu
// must be held.
func (j *Journal) closeLocked() error {
	lock, err := j.closeKeepingLock()
	if lock != nil {
		err = errors.Join(err, releaseLock(lock))
	}
	return err
}

// closeKeepingLock closes both connections and hands back the run lock,
// still held (nil when the Journal holds none). j.mu and j.rmu must be
// held.
func (j *Journal) closeKeepingLock() (*os.File, error) {
	j.closed, j.rclosed = true, true
	err := errors.Join(j.closeCheckpointerLocked(), j.closeDB())
	lock := j.lock
	j.lock = nil
	return lock, err
}
