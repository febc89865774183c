package testutil

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ScanDirtied runs a full scan of table (count(*)) under EXPLAIN (ANALYZE,
// BUFFERS) and returns how many pages it dirtied (the top node's count: a
// scan that had to set hint bits rewrites the pages it read) and the plan.
// A CHECKPOINT first writes out what is dirty (a page still dirty from the
// load would take hint bits without counting as dirtied).
func ScanDirtied(ctx context.Context, tb testing.TB, conn *pgx.Conn, table string) (int, string) {
	tb.Helper()
	if _, err := conn.Exec(ctx, "checkpoint"); err != nil {
		tb.Fatal(err)
	}
	rows, err := conn.Query(ctx, "explain (analyze, buffers, costs off, timing off) select count(*) from "+table)
	if err != nil {
		tb.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	dirtied := 0
	for _, line := range lines {
		if _, after, ok := strings.Cut(line, "dirtied="); ok {
			digits := strings.IndexFunc(after, func(r rune) bool { return r < '0' || r > '9' })
			if digits < 0 {
				digits = len(after)
			}
			dirtied, _ = strconv.Atoi(after[:digits])
			break
		}
	}
	return dirtied, strings.Join(lines, "\n")
}
