package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The statements every turn runs (the append, the transaction around a
// group of appends, and the verification reads) are prepared once on the
// connection they run on (the writer's, or the reader's: reader.go) and
// driven at the driver level, inside sql.Conn.Raw. database/sql's per-statement machinery (a connection grab,
// a retry loop, locks, argument conversion, a watcher goroutine per
// cancellable context in both database/sql and the driver, and a copy of
// every []byte it scans) cost more CPU per turn than SQLite's own work.
//
// Nothing about what is written or read changes: the same SQL, the same
// WAL commit. The statements run under a context that
// is never cancelled, so a commit that has started is never cut short (as
// a group commit never was); the caller's context is checked before it
// starts. A lock wait is bounded by busy_timeout as before.

// Statement texts of the hot path.
const (
	insertRecord = `INSERT INTO records
		(seq, session_id, turn, kind, version, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	// BEGIN IMMEDIATE takes the write lock at once, so no statement of the
	// group can meet a lock it must upgrade.
	beginImmediate = `BEGIN IMMEDIATE`
	commitTx       = `COMMIT`
	rollbackTx     = `ROLLBACK`
)

// recordColumns is the number of columns every record read selects.
const recordColumns = 8

// rawStmt is a prepared driver statement that takes a context.
type rawStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// rawState is the driver-level state of one connection: the prepared
// statements and the buffers reused by every append and read. Guarded by the
// lock that guards its connection (the writer's j.mu, the reader's j.rmu);
// the statements are used only inside raw.
type rawState struct {
	stmts map[string]rawStmt
	// inserts[n] is the text of the INSERT of n rows, margs its arguments.
	inserts [maxRowsPerInsert + 1]string
	margs   []driver.NamedValue
	args    [recordColumns]driver.NamedValue
	dest    [recordColumns]driver.Value
	// hashBuf is the hash input of one record, reused.
	hashBuf []byte
}

// dbConn is one SQLite connection of a Journal, held for its lifetime: the
// hot statements run on it at the driver level, the rest through its
// database/sql methods. A Journal being written has two: the writer, which
// commits, and the reader, which verification reads on (see reader.go).
type dbConn struct {
	db   *sql.DB
	conn *sql.Conn
	rs   rawState
}

// newDBConn takes db's one connection; on an error db is closed.
func newDBConn(ctx context.Context, db *sql.DB) (*dbConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &dbConn{db: db, conn: conn}, nil
}

// close closes the prepared statements, the connection and the database,
// in that order (a statement left open would keep SQLite's file open). It
// is safe on nil.
func (d *dbConn) close() error {
	if d == nil {
		return nil
	}
	errs := []error{d.closeRaw(), d.conn.Close(), d.db.Close()}
	return errors.Join(errs...)
}

// raw runs f on the connection at the driver level. The lock guarding d
// must be held, and f must not use d.conn's own methods (they wait for the
// connection f holds).
func (d *dbConn) raw(f func(c driver.Conn) error) error {
	return d.conn.Raw(func(dc any) error {
		c, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("the SQLite driver connection is a %T", dc)
		}
		return f(c)
	})
}

// prepared returns the statement q on c, preparing it on first use. Only
// inside d.raw.
func (d *dbConn) prepared(c driver.Conn, q string) (rawStmt, error) {
	if st, ok := d.rs.stmts[q]; ok {
		return st, nil
	}
	pc, ok := c.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("the SQLite driver connection %T cannot prepare with a context", c)
	}
	ds, err := pc.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(rawStmt)
	if !ok {
		_ = ds.Close()
		return nil, fmt.Errorf("the SQLite driver statement %T does not take a context", ds)
	}
	if d.rs.stmts == nil {
		d.rs.stmts = make(map[string]rawStmt)
	}
	d.rs.stmts[q] = st
	return st, nil
}

// execRaw runs q on c with args.
func (d *dbConn) execRaw(c driver.Conn, q string, args []driver.NamedValue) error {
	st, err := d.prepared(c, q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(context.Background(), args)
	return err
}

// maxRowsPerInsert caps the rows of one INSERT statement (8 parameters a
// row, far below SQLite's limit of 32,766): a group of up to this many
// rows, which is nearly every group, commits as one statement.
const maxRowsPerInsert = 16

// insertRows writes rows on c: up to maxRowsPerInsert rows as one
// autocommit INSERT of them all (a statement is atomic, so it is their
// transaction, without a BEGIN and a COMMIT to run), more as a BEGIN
// IMMEDIATE … COMMIT transaction of such statements. On an error nothing of
// it is committed (unless the COMMIT itself took effect, which the caller
// checks).
func (d *dbConn) insertRows(c driver.Conn, rows []pendingRow) error {
	if len(rows) <= maxRowsPerInsert {
		return d.insertStatement(c, rows)
	}
	if err := d.execRaw(c, beginImmediate, nil); err != nil {
		return err
	}
	for len(rows) > 0 {
		n := min(len(rows), maxRowsPerInsert)
		if err := d.insertStatement(c, rows[:n]); err != nil {
			_ = d.execRaw(c, rollbackTx, nil)
			return err
		}
		rows = rows[n:]
	}
	if err := d.execRaw(c, commitTx, nil); err != nil {
		// A COMMIT that failed may leave the transaction open; a ROLLBACK
		// when none is open fails harmlessly.
		_ = d.execRaw(c, rollbackTx, nil)
		return err
	}
	return nil
}

// insertStatement inserts rows (1 to maxRowsPerInsert of them) with one
// INSERT statement, prepared once per row count.
func (d *dbConn) insertStatement(c driver.Conn, rows []pendingRow) error {
	n := len(rows)
	if d.rs.inserts[n] == "" {
		d.rs.inserts[n] = insertRecord + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?)", n-1)
	}
	a := d.rs.margs[:0]
	for i := range rows {
		x := &rows[i]
		vals := [recordColumns]driver.Value{x.r.Seq, x.r.SessionID, int64(x.r.Turn), string(x.r.Kind), int64(x.r.Version), x.r.Payload, x.prev[:], x.hash[:]}
		for _, v := range vals {
			a = append(a, driver.NamedValue{Ordinal: len(a) + 1, Value: v})
		}
	}
	d.rs.margs = a
	return d.execRaw(c, d.rs.inserts[n], a)
}

// pendingRow is one record of a group commit, numbered and hashed.
type pendingRow struct {
	r          Record
	prev, hash [32]byte
}

// queryRecords runs the record query q with args on c and calls each for
// every row, in order. The row's Record fields are fresh; prevHash and hash
// are valid only during the call. Closing the rows resets the statement, so
// no read transaction outlives the call (one would hold back checkpoints).
// id names the journal in a tampering error.
func (d *dbConn) queryRecords(c driver.Conn, id, q string, args []driver.NamedValue, each func(r Record, prevHash, hash []byte) error) (err error) {
	st, err := d.prepared(c, q)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(context.Background(), args)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rows.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	dest := d.rs.dest[:]
	for {
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		r, prevHash, hash, err := recordFrom(id, dest)
		if err != nil {
			return err
		}
		if err := each(r, prevHash, hash); err != nil {
			return err
		}
	}
}

// recordFrom is the record of one row of a record query. A column of a type
// the writer never stores can only be an edit of the file: it is reported
// as tampering.
func recordFrom(id string, v []driver.Value) (r Record, prevHash, hash []byte, err error) {
	seq, ok0 := v[0].(int64)
	turn, ok2 := v[2].(int64)
	version, ok4 := v[4].(int64)
	if !ok0 || !ok2 || !ok4 {
		s, _ := v[0].(int64)
		return Record{}, nil, nil, &TamperedError{RunID: id, Seq: s, Reason: "a number column holds something else"}
	}
	r = Record{Seq: seq, SessionID: textOf(v[1]), Turn: int(turn), Kind: Kind(textOf(v[3])), Version: int(version), Payload: bytesOf(v[5])}
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	return r, bytesOf(v[6]), bytesOf(v[7]), nil
}

// textOf is a TEXT column's value; a BLOB (a tampered row) hashes the same
// bytes as its text.
func textOf(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// bytesOf is a BLOB column's value: the driver's own copy, not copied again.
func bytesOf(v driver.Value) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	}
	return nil
}

// closeRaw closes the prepared driver statements.
func (d *dbConn) closeRaw() error {
	if len(d.rs.stmts) == 0 {
		return nil
	}
	var errs []error
	err := d.raw(func(driver.Conn) error {
		for _, st := range d.rs.stmts {
			errs = append(errs, st.Close())
		}
		return nil
	})
	d.rs.stmts = nil
	return errors.Join(append(errs, err)...)
}

// appendHashInput appends the bytes Hash hashes for r after prev to buf.
// Every field is length-prefixed or fixed-width.
func appendHashInput(buf []byte, prev [32]byte, r Record) []byte {
	buf = append(buf, "kmx.journal.v1\x00"...)
	buf = append(buf, prev[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.Seq))
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(r.SessionID)))
	buf = append(buf, r.SessionID...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(int64(r.Turn)))
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(r.Kind)))
	buf = append(buf, r.Kind...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(int64(r.Version)))
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(r.Payload)))
	return append(buf, r.Payload...)
}

// hash is Hash with the connection's reused input buffer. The lock guarding
// d must be held.
func (d *dbConn) hash(prev [32]byte, r Record) [32]byte {
	d.rs.hashBuf = appendHashInput(d.rs.hashBuf[:0], prev, r)
	if cap(d.rs.hashBuf) > 1<<20 {
		// A rare huge record does not pin its buffer for the whole run.
		defer func() { d.rs.hashBuf = nil }()
	}
	return sha256.Sum256(d.rs.hashBuf)
}
