package tpch

import (
	"fmt"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/workload"
)

// ShardOptions (workload.Sharder) splits the throughput test's query
// streams: each shard runs its share of the whole run's streams, numbered
// as the whole run numbers them (their queries and parameters are the
// same), and shard 0 runs the refresh stream, with a pair of refresh
// functions for every stream of the run. The power test is one stream:
// it is not sharded.
func (Workload) ShardOptions(sh workload.Shard, v option.Values) (option.Values, string, error) {
	if v.Bool("validate") || v.String("test") != TestThroughput {
		return nil, "", errs.Usage("shard the throughput test alone (--test throughput --streams S), after a power test run unsharded",
			"only tpch's throughput test can be sharded: the power test is one stream")
	}
	total := v.Int("streams")
	if total == 0 {
		return nil, "", errs.Usage("give --streams S, the whole run's query streams (each shard runs its share)",
			"a sharded tpch run needs its streams given: the default comes from the loaded scale, which the shards do not know yet")
	}
	if total < int64(sh.Count) {
		return nil, "", errs.Usage(fmt.Sprintf("give --streams %d or more, or fewer shards", sh.Count), "%d shards need at least one of the %d query streams each", sh.Count, total)
	}
	out := v.Clone()
	mine, first := sh.Share(total), sh.Offset(total)
	out["streams"] = fmt.Sprint(mine)
	part := fmt.Sprintf("shard %s: query streams %d-%d of %d", sh, first+1, first+mine, total)
	if v.Bool("refresh") {
		if sh.Index == 0 {
			part += fmt.Sprintf(", and the refresh stream (%d pairs)", total)
		} else {
			out["refresh"] = "false"
		}
	}
	return out, part, nil
}

// MergeShards makes the merged run's TPC-H-like figures: every shard's
// query streams and shard 0's refresh stream, their times on one axis
// (the server's clock), and Throughput@Size over the whole throughput
// test: from the first shard's start to the last stream's end.
func (Workload) MergeShards(in *workload.MergeInput) (*workload.Verdict, error) {
	x := &Summary{Test: TestThroughput}
	v := &workload.Verdict{Extra: x}
	var t0, t1 time.Time
	type window struct {
		start time.Time
		px    *Summary
	}
	var ws []window
	for _, p := range in.Parts {
		if p == nil {
			continue
		}
		px := results.ExtraAs[Summary](p)
		st := p.StartedAt
		if p.Shard != nil {
			st = st.Add(time.Duration(p.Shard.ClockOffsetMs * float64(time.Millisecond)))
		}
		en := st.Add(time.Duration(px.ThroughputSeconds * float64(time.Second)))
		if len(ws) == 0 {
			x.Scale, x.Seed, x.Refresh, x.Settings = px.Scale, px.Seed, px.Refresh, px.Settings
			t0, t1 = st, en
		}
		t0, t1 = minTime(t0, st), maxTime(t1, en)
		ws = append(ws, window{st, px})
		x.Streams += px.Streams
	}
	if len(ws) == 0 {
		return v, nil
	}
	for _, w := range ws {
		shift := w.start.Sub(t0).Seconds()
		for _, q := range w.px.Queries {
			q.EndS += shift
			x.Queries = append(x.Queries, q)
		}
		x.Refreshes = append(x.Refreshes, w.px.Refreshes...)
	}
	if x.Streams < ws[0].px.StreamsOfRun {
		// A shard's streams are missing: no metric (tally finds them
		// incomplete).
		x.Streams = ws[0].px.StreamsOfRun
	}
	x.ThroughputSeconds = t1.Sub(t0).Seconds()
	x.tally()
	return v, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
