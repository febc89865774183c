package results

import (
	"fmt"
	"strings"
	"time"
)

// Merge is how a run merged from shards came together: the key the shards
// met under, the window they shared, and each shard.
type Merge struct {
	// Key is the shards' rendezvous key (empty when they met under none).
	Key   string `json:"key,omitempty"`
	Count int    `json:"count"`
	// CommonStart and CommonS are the window every shard measured (on
	// the database server's clock): the latest start to the earliest end.
	CommonStart time.Time `json:"common_start"`
	CommonS     float64   `json:"common_s"`
	// MinOverlapPct is the least share of a shard's window that the
	// common window covers (100 when they all start and end together).
	MinOverlapPct float64       `json:"min_overlap_pct"`
	Shards        []MergedShard `json:"shards"`
	// Notes say what the merge could not do exactly (a figure taken from
	// one shard, an interval without histograms).
	Notes []string `json:"notes,omitempty"`
}

// MergedShard is one shard of a merged run: where its result came from,
// what it ran and measured, and its window on the server's clock. A
// missing shard has Missing set and nothing else but its index.
type MergedShard struct {
	Index   int    `json:"index"`
	Missing bool   `json:"missing,omitempty"`
	Source  string `json:"source,omitempty"`
	RunID   int64  `json:"run_id,omitempty"`
	Part    string `json:"part,omitempty"`
	Status  string `json:"status,omitempty"`
	Machine string `json:"machine,omitempty"`
	// Transactions and TPS are the shard's own.
	Transactions int64   `json:"transactions"`
	TPS          float64 `json:"tps"`
	// Start (server's clock) and DurationS are the shard's measured
	// window; OverlapPct the share of it the common window covers.
	Start         time.Time `json:"start,omitzero"`
	DurationS     float64   `json:"duration_s"`
	OverlapPct    float64   `json:"overlap_pct"`
	ClockOffsetMs float64   `json:"clock_offset_ms"`
	RoundTripMs   float64   `json:"round_trip_ms"`
	// Hosts are the machines the shard measured (its own, and for shard
	// 0 the server's).
	Hosts []Host `json:"hosts,omitempty"`
}

// MergeBlocks is a merged run's shards in the terminal: how their windows
// met and what each ran and measured (nothing for a run not merged).
func MergeBlocks(s *Summary) []Block {
	m := s.Merge
	if m == nil {
		return nil
	}
	key := ""
	if m.Key != "" {
		key = fmt.Sprintf(" (rendezvous %q)", m.Key)
	}
	out := []Block{Line(fmt.Sprintf("merged from %d shards%s: common window %.1f s from %s (server's clock); the least a shard's window is covered: %.2f%%",
		m.Count, key, m.CommonS, m.CommonStart.Format("15:04:05.000"), m.MinOverlapPct))}
	var first time.Time
	for _, sh := range m.Shards {
		if !sh.Missing && (first.IsZero() || sh.Start.Before(first)) {
			first = sh.Start
		}
	}
	t := &Table{Columns: []string{"shard", "status", "part", "machine", "transactions", "tps", "started ms", "window s", "covered %", "clock offset ms"}, Left: 4}
	for _, sh := range m.Shards {
		if sh.Missing {
			t.Row(fmt.Sprintf("%d/%d", sh.Index, m.Count), "MISSING", "", "", "", "", "", "", "", "")
			continue
		}
		t.Row(fmt.Sprintf("%d/%d", sh.Index, m.Count), sh.Status, strings.TrimPrefix(sh.Part, fmt.Sprintf("shard %d/%d: ", sh.Index, m.Count)), sh.Machine,
			fmt.Sprint(sh.Transactions), FmtNum(sh.TPS), fmt.Sprintf("+%.1f", sh.Start.Sub(first).Seconds()*1000),
			fmt.Sprintf("%.1f", sh.DurationS), fmt.Sprintf("%.2f", sh.OverlapPct), fmt.Sprintf("%+.1f", sh.ClockOffsetMs))
	}
	out = append(out, TableBlock(t))
	for _, n := range m.Notes {
		out = append(out, Line("note: "+n))
	}
	return out
}
