package tpcc

import (
	"fmt"
	"sort"
	"strings"
)

// What a load does, as data: the tables (partitioned or not), the chunks of
// rows each COPY stream loads in one transaction, and the key and ANALYZE
// steps that follow a table's data.

// wColumn is the warehouse column of each per-warehouse table: the range
// partition key with --partition, and how chunks split a table.
var wColumn = map[string]string{
	"warehouse":  "w_id",
	"district":   "d_w_id",
	"customer":   "c_w_id",
	"history":    "h_w_id",
	"new_order":  "no_w_id",
	"orders":     "o_w_id",
	"order_line": "ol_w_id",
	"stock":      "s_w_id",
}

// partitionedTables are split into range partitions by warehouse with
// --partition: the six big per-warehouse tables. warehouse and district are
// tiny (their rows are the hot spots of the workload, partitioning them buys
// nothing) and item is not per warehouse.
var partitionedTables = []string{"customer", "history", "new_order", "orders", "order_line", "stock"}

func isPartitioned(table string) bool {
	for _, t := range partitionedTables {
		if t == table {
			return true
		}
	}
	return false
}

// MaxPartitions caps the partitions per table with --partition.
const MaxPartitions = 64

// partitionCount is the number of range partitions per partitioned table:
// one per warehouse up to MaxPartitions, then ranges of ceil(W/64)
// warehouses (the last one may be smaller).
func partitionCount(warehouses int) int {
	if warehouses <= MaxPartitions {
		return warehouses
	}
	per := (warehouses + MaxPartitions - 1) / MaxPartitions
	return (warehouses + per - 1) / per
}

// partitionRanges returns the warehouse range [lo, hi] of each partition.
func partitionRanges(warehouses, parts int) [][2]int {
	per := (warehouses + parts - 1) / parts
	var out [][2]int
	for lo := 1; lo <= warehouses; lo += per {
		hi := lo + per - 1
		if hi > warehouses {
			hi = warehouses
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

func partitionName(table string, p int) string { return fmt.Sprintf("%s_p%d", table, p) }

// createStatements is the DDL of a new load: the nine tables with
// autovacuum off while loading (Load turns it back on at the end), range
// partitions when parts > 0.
func createStatements(warehouses, parts int) []string {
	const noAV = " with (autovacuum_enabled = off)"
	var out []string
	for _, t := range Tables {
		if parts > 0 && isPartitioned(t) {
			out = append(out, tableDDL[t]+" partition by range ("+wColumn[t]+")")
			for i, r := range partitionRanges(warehouses, parts) {
				out = append(out, fmt.Sprintf("create table %s partition of %s for values from (%d) to (%d)%s",
					partitionName(t, i+1), t, r[0], r[1]+1, noAV))
			}
			continue
		}
		out = append(out, tableDDL[t]+noAV)
	}
	return out
}

// leafRelations are the relations that hold rows (tables and partitions).
func leafRelations(warehouses, parts int) []string {
	var out []string
	for _, t := range Tables {
		if parts > 0 && isPartitioned(t) {
			for i := range partitionRanges(warehouses, parts) {
				out = append(out, partitionName(t, i+1))
			}
			continue
		}
		out = append(out, t)
	}
	return out
}

// chunk is the unit of loading: the rows of table for warehouses wlo..whi,
// copied into rel in one transaction that also marks the chunk done in the
// progress table. With freeze the transaction first truncates rel, which
// allows COPY FREEZE (rows written frozen and all-visible, so the table
// needs no VACUUM) and makes a redone chunk replace a partial one.
type chunk struct {
	ID       int
	Table    string
	Rel      string
	WLo, WHi int // 0, 0 for item
	Freeze   bool
	Rows     int64 // exact rows the chunk writes
}

// bytesPerRow estimates the COPY text bytes per row, to balance streams.
var bytesPerRow = map[string]int64{
	"item": 80, "warehouse": 90, "district": 100, "customer": 660, "history": 60,
	"orders": 40, "new_order": 15, "order_line": 75, "stock": 320,
}

func (c chunk) cost() int64 { return c.Rows * bytesPerRow[c.Table] }

// planChunks splits the load into chunks.
//
//   - item, warehouse and district: one chunk each (COPY FREEZE).
//   - Partitioned: one chunk per partition (COPY FREEZE into the partition).
//   - Not partitioned: one chunk per table (COPY FREEZE), unless a table
//     alone is more than a worker's fair share of all rows (many workers);
//     then it is split into warehouse ranges loaded by several streams at
//     once, with plain COPY (and vacuumed after the load). On 2 cores a
//     table per stream with FREEZE is faster (see the figures at Load).
func planChunks(warehouses, parts, workers int, seed int64) []chunk {
	var out []chunk
	add := func(table, rel string, lo, hi int, freeze bool) {
		out = append(out, chunk{ID: len(out) + 1, Table: table, Rel: rel, WLo: lo, WHi: hi, Freeze: freeze, Rows: chunkRows(table, seed, lo, hi)})
	}
	// The fair share per worker, in estimated bytes.
	var total int64
	for _, t := range Tables {
		lo, hi := 1, warehouses
		if t == "item" {
			lo, hi = 0, 0
		}
		total += chunkRows(t, seed, lo, hi) * bytesPerRow[t]
	}
	share := total / int64(max(workers, 1))
	for _, t := range Tables {
		switch {
		case t == "item":
			add(t, t, 0, 0, true)
		case parts > 0 && isPartitioned(t):
			for i, r := range partitionRanges(warehouses, parts) {
				add(t, partitionName(t, i+1), r[0], r[1], true)
			}
		default:
			cost := chunkRows(t, seed, 1, warehouses) * bytesPerRow[t]
			n := 1
			if cost > share && warehouses > 1 && share > 0 {
				n = int((cost + share - 1) / share)
				n = min(n, warehouses, workers)
			}
			if n <= 1 {
				add(t, t, 1, warehouses, true)
				continue
			}
			per := (warehouses + n - 1) / n
			for lo := 1; lo <= warehouses; lo += per {
				add(t, t, lo, min(lo+per-1, warehouses), false)
			}
		}
	}
	return out
}

// keyStep is one key or index statement of Keys.
type keyStep struct {
	Table string
	Name  string // the constraint or index name (skipped on resume when it exists)
	SQL   string
}

// keySteps parses Keys: "alter table T add constraint N ..." and
// "create [unique] index N on T ...".
func keySteps() []keyStep {
	var out []keyStep
	for _, s := range Keys {
		f := strings.Fields(s)
		var k keyStep
		k.SQL = s
		switch {
		case len(f) > 5 && f[0] == "alter" && f[3] == "add" && f[4] == "constraint":
			k.Table, k.Name = f[2], f[5]
		case len(f) > 4 && f[0] == "create" && f[1] == "index":
			k.Name, k.Table = f[2], f[4]
		case len(f) > 5 && f[0] == "create" && f[1] == "unique" && f[2] == "index":
			k.Name, k.Table = f[3], f[5]
		default:
			panic("tpcc: cannot parse key statement: " + s)
		}
		out = append(out, k)
	}
	return out
}

// sortByCost orders chunks biggest first (longest-processing-time-first
// scheduling keeps the streams busy to the end).
func sortByCost(cs []chunk) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].cost() > cs[j].cost() })
}
