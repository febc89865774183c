package tpcb

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Tables in load order (pgbench's names).
var tableNames = []string{"pgbench_branches", "pgbench_tellers", "pgbench_accounts", "pgbench_history"}

// MetaTable records what tunebench loaded, so runs can refuse a mismatch.
const MetaTable = "tunebench_tpcb_meta"

// createStatements returns the DDL for the four pgbench tables. Column types
// and widths are pgbench's: filler char(84) for accounts and tellers, char(88)
// for branches, char(22) for history; aid becomes bigint from scale 20000.
func createStatements(scale, fillfactor, partitions int, method string) []string {
	aidType := "int"
	if scale >= BigintScale {
		aidType = "bigint"
	}
	with := ""
	if fillfactor != 100 {
		with = fmt.Sprintf(" with (fillfactor=%d)", fillfactor)
	}
	stmts := []string{
		"create table pgbench_history (tid int, bid int, aid " + aidType + ", delta int, mtime timestamp, filler char(22))",
		"create table pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84))" + with,
		"create table pgbench_branches (bid int not null, bbalance int, filler char(88))" + with,
	}
	if partitions == 0 {
		stmts = append(stmts, "create table pgbench_accounts (aid "+aidType+" not null, bid int, abalance int, filler char(84))"+with)
		return stmts
	}
	stmts = append(stmts, fmt.Sprintf("create table pgbench_accounts (aid %s not null, bid int, abalance int, filler char(84)) partition by %s (aid)", aidType, method))
	naccounts := int64(scale) * AccountsPerScale
	part := (naccounts + int64(partitions) - 1) / int64(partitions)
	for p := 1; p <= partitions; p++ {
		var bound string
		if method == "hash" {
			bound = fmt.Sprintf("for values with (modulus %d, remainder %d)", partitions, p-1)
		} else {
			lo, hi := "minvalue", "maxvalue"
			if p > 1 {
				lo = fmt.Sprint(int64(p-1)*part + 1)
			}
			if p < partitions {
				hi = fmt.Sprint(int64(p)*part + 1)
			}
			bound = fmt.Sprintf("for values from (%s) to (%s)", lo, hi)
		}
		stmts = append(stmts, fmt.Sprintf("create table pgbench_accounts_%d partition of pgbench_accounts %s%s", p, bound, with))
	}
	return stmts
}

// primaryKeys are built after the data, as pgbench does.
var primaryKeys = []string{
	"alter table pgbench_branches add primary key (bid)",
	"alter table pgbench_tellers add primary key (tid)",
	"alter table pgbench_accounts add primary key (aid)",
}

// existingTables lists which pgbench tables exist in the current schema path.
func existingTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `select c.relname from pg_class c
		where c.relname = any($1) and pg_table_is_visible(c.oid) order by 1`, append(append([]string{}, tableNames...), MetaTable))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Info is what a loaded database says about itself.
type Info struct {
	Scale      int
	Partitions int
	Method     string
	LoadedBy   string // "tunebench" or "pgbench" (no meta table)
}

// ReadInfo finds the scale of a loaded database: from tunebench's meta table
// when present, else from count(*) of pgbench_branches as pgbench does.
func ReadInfo(ctx context.Context, conn *pgx.Conn) (Info, error) {
	have, err := existingTables(ctx, conn)
	if err != nil {
		return Info{}, err
	}
	set, err := present(have)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if set[MetaTable] {
		var status string
		err = conn.QueryRow(ctx, "select scale, partitions, method, status from "+MetaTable).Scan(&info.Scale, &info.Partitions, &info.Method, &status)
		if err != nil {
			return Info{}, fmt.Errorf("reading %s: %w", MetaTable, err)
		}
		if status != "complete" {
			return Info{}, fmt.Errorf("the load did not finish (status %q): load again with --drop", status)
		}
		cur, err := metaCurrent(ctx, conn)
		if err != nil {
			return Info{}, err
		}
		if cur {
			info.LoadedBy = "tunebench"
			return info, nil
		}
		info = Info{}
	}
	var n int64
	if err := conn.QueryRow(ctx, "select count(*) from pgbench_branches").Scan(&n); err != nil {
		return Info{}, err
	}
	if n == 0 {
		return Info{}, fmt.Errorf("pgbench_branches is empty")
	}
	info.Scale = int(n)
	info.LoadedBy = "pgbench"
	return info, nil
}

// present is the set of tables found, or the error that names the pgbench
// tables missing.
func present(have []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var missing []string
	for _, n := range tableNames {
		if !set[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not loaded: missing %s", strings.Join(missing, ", "))
	}
	return set, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// metaCurrent reports whether the meta table still describes the tables:
// pgbench -i after a tunebench load drops and recreates them (and empties
// the history) but leaves the meta table, whose scale and last-run record
// would then be wrong. The load records the OID of pgbench_accounts (loads
// made before that column existed are checked by their scale only).
func metaCurrent(ctx context.Context, q querier) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `select m.scale * `+strconv.Itoa(BranchesPerScale)+` = (select count(*) from pgbench_branches)
		and coalesce((to_jsonb(m) ->> 'accounts_oid')::oid = 'pgbench_accounts'::regclass::oid, true)
		from `+MetaTable+` m`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", MetaTable, err)
	}
	return ok, nil
}
