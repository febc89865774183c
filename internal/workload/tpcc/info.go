package tpcc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
)

// metaDDL and progressDDL create the bookkeeping tables of a load.
const (
	metaDDL = `create table ` + MetaTable + ` (
    warehouses   int not null,
    partitions   int not null,          -- range partitions per big table, 0 = not partitioned
    seed         bigint not null,       -- the data generator's seed
    c_last       int not null,          -- C-Load of NURand(255, 0, 999) (clause 2.1.6.1)
    c_cust_id    int not null,
    c_item_id    int not null,
    format       text not null,         -- COPY format used
    status       text not null,         -- loading, indexing, complete
    version      text not null default '',
    started_at   timestamptz not null,  -- also the timestamp in the rows (C_SINCE, O_ENTRY_D, ...)
    loaded_at    timestamptz,
    load_seconds double precision
)`
	progressDDL = `create table ` + ProgressTable + ` (
    chunk   int primary key,
    tbl     text not null,
    rel     text not null,
    w_lo    int not null,
    w_hi    int not null,
    frozen  bool not null,
    rows    bigint not null,
    done_at timestamptz
)`
)

// Info is what a loaded database says about itself (from MetaTable).
type Info struct {
	Warehouses  int       `json:"warehouses"`
	Load        Constants `json:"load_constants"` // C-Load; runs draw theirs with NewRunConstants(r, Load)
	Status      string    `json:"status"`
	Partitioned bool      `json:"partitioned"`
	Partitions  int       `json:"partitions"` // per partitioned table; 0 when not partitioned
	Seed        int64     `json:"seed"`
	Format      string    `json:"format"`
	Version     string    `json:"version,omitempty"`
	StartedAt   time.Time `json:"started_at"` // the load's start: the date in C_SINCE, H_DATE, O_ENTRY_D, OL_DELIVERY_D
	LoadedAt    time.Time `json:"loaded_at"`
}

// existingRelations lists which of names exist as tables in the search path.
func existingRelations(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, names []string) (map[string]bool, error) {
	rows, err := q.Query(ctx, `select c.relname from pg_class c
		where c.relname = any($1) and c.relkind in ('r', 'p') and pg_table_is_visible(c.oid)`, names)
	if err != nil {
		return nil, err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, h := range have {
		out[h] = true
	}
	return out, nil
}

const loadHint = "load it with `tunebench load tpcc --warehouses W`"

// readMeta reads the meta row; the meta table must exist.
func readMeta(ctx context.Context, conn *pgx.Conn) (Info, error) {
	var info Info
	var loaded *time.Time
	err := conn.QueryRow(ctx, `select warehouses, partitions, seed, c_last, c_cust_id, c_item_id, format, status, version, started_at, loaded_at from `+MetaTable).
		Scan(&info.Warehouses, &info.Partitions, &info.Seed, &info.Load.CLast, &info.Load.CCustID, &info.Load.CItemID,
			&info.Format, &info.Status, &info.Version, &info.StartedAt, &loaded)
	if errors.Is(err, pgx.ErrNoRows) {
		return info, errs.Usage("reload with `tunebench load tpcc --warehouses W --drop`", "%s is empty: the tpcc load never got past creating the tables", MetaTable)
	}
	if err != nil {
		return info, fmt.Errorf("reading %s: %w", MetaTable, err)
	}
	info.Partitioned = info.Partitions > 0
	if loaded != nil {
		info.LoadedAt = *loaded
	}
	return info, nil
}

// ReadInfo reads what tunebench loaded into the database conn is connected
// to. It refuses, with the fix in the error's hint, a database without the
// tpcc tables, one not loaded by tunebench, and a load that did not finish
// (interrupted: resume it or reload). The Info is returned with the
// unfinished-load error so callers can name the warehouses.
func ReadInfo(ctx context.Context, conn *pgx.Conn) (Info, error) {
	have, err := existingRelations(ctx, conn, append(append([]string{}, Tables...), MetaTable))
	if err != nil {
		return Info{}, err
	}
	return judgeLoad(have, func() (Info, error) { return readMeta(ctx, conn) })
}

// judgeLoad refuses, with the fix in the error's hint, a database without
// the tpcc tables (have: which of Tables and MetaTable exist), one not
// loaded by tunebench, and a load that did not finish; meta reads the
// meta row. Both dialects' readers share it.
func judgeLoad(have map[string]bool, meta func() (Info, error)) (Info, error) {
	var missing []string
	for _, t := range Tables {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	switch {
	case len(missing) == len(Tables) && !have[MetaTable]:
		return Info{}, errs.Usage(loadHint, "the database has no tpcc tables")
	case !have[MetaTable]:
		return Info{}, errs.Usage("reload with `tunebench load tpcc --warehouses W --drop`",
			"the tpcc tables were not loaded by tunebench (no %s table), so the warehouses and load constants are unknown", MetaTable)
	}
	info, err := meta()
	if err != nil {
		return info, err
	}
	if len(missing) > 0 {
		return info, errs.Usage("reload with `tunebench load tpcc --warehouses W --drop`", "the tpcc schema is incomplete: missing %s", strings.Join(missing, ", "))
	}
	if info.Status != StatusComplete {
		return info, errs.Usage(
			fmt.Sprintf("finish it with `tunebench load tpcc --resume`, or start over with `tunebench load tpcc --warehouses %d --drop`", info.Warehouses),
			"the tpcc load of %d warehouses did not finish (status %q): the database must not be used as it is", info.Warehouses, info.Status)
	}
	return info, nil
}
