package journal

import (
	"context"
	"database/sql/driver"
	"fmt"
	"testing"
)

// TestInsertRowsIsAllOrNothing: a group of rows goes in as one INSERT
// statement (up to maxRowsPerInsert) or one transaction of such statements
// (more); either way a row that fails at the database (here a seq already
// taken) leaves none of the group's rows behind, and a group that fits
// commits every row in order.
func TestInsertRowsIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{2, maxRowsPerInsert, maxRowsPerInsert + 1, 3*maxRowsPerInsert + 2} {
		t.Run(fmt.Sprintf("rows=%d", n), func(t *testing.T) {
			j := journalWithTurn(t, "s1") // records 1 to 5
			group := func(first int64, clash bool) []pendingRow {
				rows := make([]pendingRow, n)
				for i := range rows {
					rows[i].r = Record{Seq: first + int64(i), SessionID: "s2", Turn: 1, Kind: KindTurnStarted, Version: SchemaVersion, Payload: fmt.Appendf(nil, `{"i":%d}`, i)}
				}
				if clash {
					rows[n-1].r.Seq = 5 // taken by s1's last record
				}
				return rows
			}
			count := func() int {
				var c int
				if err := j.w.conn.QueryRowContext(ctx, `SELECT count(*) FROM records`).Scan(&c); err != nil {
					t.Fatal(err)
				}
				return c
			}
			insert := func(rows []pendingRow) error {
				j.mu.Lock()
				defer j.mu.Unlock()
				return j.w.raw(func(c driver.Conn) error { return j.w.insertRows(c, rows) })
			}
			if err := insert(group(6, true)); err == nil {
				t.Fatal("a group with a taken seq was inserted")
			}
			if got := count(); got != 5 {
				t.Fatalf("after the refused group: %d records, want the 5 before it", got)
			}
			if err := insert(group(6, false)); err != nil {
				t.Fatal(err)
			}
			if got := count(); got != 5+n {
				t.Fatalf("after the group: %d records, want %d", got, 5+n)
			}
			var last string
			if err := j.w.conn.QueryRowContext(ctx, `SELECT payload FROM records WHERE seq = ?`, 5+n).Scan(&last); err != nil || last != fmt.Sprintf(`{"i":%d}`, n-1) {
				t.Fatalf("record %d holds %q (%v), want the group's last", 5+n, last, err)
			}
		})
	}
}
