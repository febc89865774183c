package tpcc

import (
	"fmt"

	"github.com/tunebench/tunebench/internal/workload"
)

// MergeShards makes a merged run's tpcc figures: NOPM summed over the
// shards (each over its own window), the time profile from the merged
// histograms, TPM and HammerDB's NOPM from the first shard's reads of
// the database (they count every shard's work), and the NOPM cross-check
// once over all shards: sum(d_next_o_id) from the smallest count before
// to the largest after, against every shard's committed New-Orders.
func (Workload) MergeShards(in *workload.MergeInput) (*workload.Verdict, error) {
	x := &Summary{}
	v := &workload.Verdict{Extra: x}
	xc := &NOPMCheck{}
	n, first := 0, -1
	for i, p := range in.Parts {
		if p == nil {
			continue
		}
		px := extraOf(p)
		if first < 0 {
			first = i
			x.Warehouses, x.Mode, x.Isolation, x.AllWarehouses, x.KeyingThink = px.Warehouses, px.Mode, px.Isolation, px.AllWarehouses, px.KeyingThink
			x.TPM, x.NOPMDatabase, x.Unknown = px.TPM, px.NOPMDatabase, px.Unknown
		}
		x.VUsers += px.VUsers
		x.NOPM += px.NOPM
		if c := px.NOPMCheck; c != nil && c.After != 0 {
			if n == 0 || c.Before < xc.Before {
				xc.Before = c.Before
			}
			xc.After = max(xc.After, c.After)
			xc.DriverCommitted += c.DriverCommitted
			xc.Ambiguous += c.Ambiguous
			n++
		}
	}
	if first < 0 {
		return v, nil
	}
	if first > 0 || x.TPM != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("tpm and nopm_database are shard %d's reads of the database over its window (they count every shard's transactions)", first))
	}
	// An audit's figure is a ratio over its own samples: the shards' are
	// not added up here (each shard's run keeps its own).
	v.Warnings = append(v.Warnings, "the distribution audits are each shard's own, in the shards' runs")
	x.PerTransaction = perTransaction(in.Result)
	// The shards' NOPM per interval, summed (the per-op p95 of an
	// interval cannot be merged: no per-op interval histograms).
	if in.SumSeries != nil {
		v.Series = append(v.Series, in.SumSeries("nopm")...)
	}
	xc.DatabaseGrowth = xc.After - xc.Before
	switch {
	case n < len(in.Parts):
		xc.NotRun = true
		xc.Detail = fmt.Sprintf("NOT RUN: %d of %d shards read sum(d_next_o_id) before and after (a shard missing, failed, or the database unreachable after its run)", n, len(in.Parts))
	case !in.Met:
		xc.NotRun = true
		xc.Detail = "NOT RUN: the shards did not meet at a rendezvous, so one shard's count before may include another's New-Orders"
	default:
		diff := xc.DatabaseGrowth - xc.DriverCommitted
		xc.Passed = diff >= 0 && diff <= xc.Ambiguous
		word := "MISMATCH: "
		if xc.Passed {
			word = ""
		}
		xc.Detail = fmt.Sprintf("%ssum(d_next_o_id) grew by %d; the %d shards committed %d New-Orders (ambiguous %d)", word, xc.DatabaseGrowth, n, xc.DriverCommitted, xc.Ambiguous)
	}
	switch {
	case xc.NotRun:
		v.NotRun = append(v.NotRun, "the NOPM cross-check: "+xc.Detail[len("NOT RUN: "):])
	case !xc.Passed:
		v.Failures = append(v.Failures, workload.Failure{What: "NOPM cross-check", Detail: xc.Detail,
			Hint: "the shards' count of committed New-Orders and the database disagree: something else ran New-Orders during the run, or a driver or database bug"})
	}
	x.NOPMCheck = xc
	return v, nil
}
