// Package journaltest tampers with journal files the way someone with write
// access to the state folder could, so tests can prove that tampering is
// caught. It is part of the journal's ownership (and so may import
// database/sql); only tests import it, and it never creates a journal.
//
// UpdatePayload and DeleteRecord leave the hash chain broken, which
// journal.Records reports as journal.ErrTampered. RehashChain then repairs the
// chain, including the head Finish recorded in meta, as a tamperer who knows
// the scheme would: use it on a finished journal reopened with journal.Open to
// prove that replay, not the chain, catches the change. A Journal still being
// written keeps its head in memory, so it reports even a rehashed chain as
// tampered.
package journaltest

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/journal"
)

// UpdatePayload replaces the payload of record seq with raw SQL.
func UpdatePayload(t testing.TB, dbPath string, seq int64, payload []byte) {
	t.Helper()
	if payload == nil {
		payload = []byte{}
	}
	db := open(t, dbPath)
	defer db.Close()
	res, err := db.Exec(`UPDATE records SET payload = ? WHERE seq = ?`, payload, seq)
	mustOne(t, res, err, "update payload of record", seq)
}

// SetTurnText stores text in record seq's turn column, a value of a type the
// journal never writes there (SQLite keeps a non-numeric text as text).
func SetTurnText(t testing.TB, dbPath string, seq int64, text string) {
	t.Helper()
	db := open(t, dbPath)
	defer db.Close()
	res, err := db.Exec(`UPDATE records SET turn = ? WHERE seq = ?`, text, seq)
	mustOne(t, res, err, "set the turn of record", seq)
}

// DeleteRecord deletes record seq with raw SQL.
func DeleteRecord(t testing.TB, dbPath string, seq int64) {
	t.Helper()
	db := open(t, dbPath)
	defer db.Close()
	res, err := db.Exec(`DELETE FROM records WHERE seq = ?`, seq)
	mustOne(t, res, err, "delete record", seq)
}

// RehashChain renumbers the records 1..n in their current order, recomputes
// every prev_hash and hash, and rewrites the head in meta if Finish recorded
// one, so the chain verifies again after UpdatePayload or DeleteRecord.
func RehashChain(t testing.TB, dbPath string) {
	t.Helper()
	db := open(t, dbPath)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.Query(`SELECT seq, session_id, turn, kind, version, payload FROM records ORDER BY seq`)
	if err != nil {
		t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
	}
	var recs []journal.Record
	for rows.Next() {
		var r journal.Record
		var kind string
		if err := rows.Scan(&r.Seq, &r.SessionID, &r.Turn, &kind, &r.Version, &r.Payload); err != nil {
			t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
		}
		r.Kind = journal.Kind(kind)
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
	}
	_ = rows.Close()

	var prev [32]byte
	for i, r := range recs {
		old := r.Seq
		// Ascending order only ever moves a record to a lower, free seq.
		r.Seq = int64(i + 1)
		h := journal.Hash(prev, r)
		if _, err := tx.Exec(`UPDATE records SET seq = ?, prev_hash = ?, hash = ? WHERE seq = ?`, r.Seq, prev[:], h[:], old); err != nil {
			t.Fatalf("journaltest: rehash %s record %d: %v", dbPath, old, err)
		}
		prev = h
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM meta WHERE key = 'head_seq'`).Scan(&n); err != nil {
		t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
	}
	if n == 1 {
		for k, v := range map[string]any{"head_seq": len(recs), "head_hash": hex.EncodeToString(prev[:])} {
			if _, err := tx.Exec(`UPDATE meta SET value = ? WHERE key = ?`, v, k); err != nil {
				t.Fatalf("journaltest: rehash %s meta %s: %v", dbPath, k, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("journaltest: rehash %s: %v", dbPath, err)
	}
}

// AppendForged appends r after the last record with raw SQL, numbered and
// chained onto it as the journal would chain it: a record the journal's
// writer never wrote, whose chain still verifies.
func AppendForged(t testing.TB, dbPath string, r journal.Record) {
	t.Helper()
	db := open(t, dbPath)
	defer db.Close()
	var prev [32]byte
	var seq int64
	var last []byte
	err := db.QueryRow(`SELECT seq, hash FROM records ORDER BY seq DESC LIMIT 1`).Scan(&seq, &last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("journaltest: append to %s: %v", dbPath, err)
	}
	copy(prev[:], last)
	r.Seq = seq + 1
	h := journal.Hash(prev, r)
	res, err := db.Exec(`INSERT INTO records (seq, session_id, turn, kind, version, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Seq, r.SessionID, r.Turn, string(r.Kind), r.Version, r.Payload, prev[:], h[:])
	mustOne(t, res, err, "append record", r.Seq)
}

func open(t testing.TB, dbPath string) *sql.DB {
	t.Helper()
	p := filepath.ToSlash(dbPath)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	dsn := (&url.URL{Scheme: "file", Path: p, RawQuery: "mode=rw&_busy_timeout=5000"}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatalf("journaltest: open %s: %v", dbPath, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		_ = db.Close()
		t.Fatalf("journaltest: open %s: %v", dbPath, err)
	}
	return db
}

func mustOne(t testing.TB, res sql.Result, err error, what string, seq int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("journaltest: %s %d: %v", what, seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatalf("journaltest: %s %d: %v", what, seq, err)
	}
	if n != 1 {
		t.Fatalf("journaltest: %s %d: no such record", what, seq)
	}
}
