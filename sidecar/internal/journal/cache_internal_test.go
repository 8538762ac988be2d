package journal

import (
	"context"
	"testing"
)

// TestWriterPageCacheIsSmall pins the writer connection's page cache at
// 256 KiB: SQLite's 2 MB default filled up over a long run and was most of
// kmx test's memory outside the Go heap. The pragma is per connection, so
// it is read back on the connection that writes the run.
func TestWriterPageCacheIsSmall(t *testing.T) {
	ctx := context.Background()
	j, err := Create(ctx, privateTemp(t), internalMeta())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Finish(ctx, StatusFinished) }()
	var kib int
	if err := j.w.conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&kib); err != nil {
		t.Fatal(err)
	}
	if kib != -256 {
		t.Errorf("the writer's cache_size is %d, want -256 (256 KiB)", kib)
	}
}
