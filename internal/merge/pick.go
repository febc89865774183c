package merge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/results"
	"github.com/tunebench/tunebench/internal/store"
)

// Pick chooses the group to merge: the one under key, or without a key
// the newest; notes name the groups left for another merge.
func Pick(groups []*Group, key string, sources []string) (*Group, []string, error) {
	if len(groups) == 0 {
		return nil, nil, errs.Usage("give the stores the shards wrote (each shard's results.db, from a run with --shard i/N)",
			"no shard runs in %s", strings.Join(sources, ", "))
	}
	if key != "" {
		for _, g := range groups {
			if g.Key == key {
				return g, nil, nil
			}
		}
		var keys []string
		for _, g := range groups {
			if g.Key != "" {
				keys = append(keys, fmt.Sprintf("%q", g.Key))
			}
		}
		return nil, nil, errs.Usage(fmt.Sprintf("give one of the keys found: %s", strings.Join(keys, ", ")),
			"no shard runs under the rendezvous key %q in %s", key, strings.Join(sources, ", "))
	}
	var notes []string
	if len(groups) > 1 {
		notes = append(notes, fmt.Sprintf("merging the newest sharded run (%s); %d more are in the sources (choose one with --key):", groups[0].Label(), len(groups)-1))
		for _, g := range groups[1:] {
			notes = append(notes, "  "+g.Label())
		}
	}
	return groups[0], notes, nil
}

// Existing is the id of a run in st merged from exactly g's shards (the
// same key, the same shards with the same windows), 0 for none: merging
// twice (a merge step run again) stores nothing new.
func Existing(ctx context.Context, st *store.Store, g *Group, extras results.ExtraFunc) (int64, error) {
	infos, err := st.ListRuns(ctx, store.ListFilter{Workload: g.Workload})
	if err != nil {
		return 0, err
	}
	for _, ri := range infos {
		s := results.DecodeInfo(ri, extras)
		if s == nil || s.Merge == nil || s.Merge.Key != g.Key || len(s.Merge.Shards) != len(g.Parts) {
			continue
		}
		match := true
		for i, p := range g.Parts {
			ms := s.Merge.Shards[i]
			if (p == nil) != ms.Missing || (p != nil && !ms.Start.Equal(measureStart(p).UTC())) {
				match = false
				break
			}
		}
		if match {
			return ri.ID, nil
		}
	}
	return 0, nil
}

// pollEvery is how often Await looks at the sources again.
var pollEvery = 5 * time.Second

// Await collects the sources until the group under key (without a key,
// the newest) has every shard's result, or until wait is over; then it
// returns what there is (a shard still missing is the merge's to name).
// note says, when it changes, how many shards it has and which it waits
// for. Sources that do not exist yet (a volume's directory before the
// first shard wrote to it) are waited for too.
func Await(ctx context.Context, sources []string, key string, wait time.Duration, extras results.ExtraFunc, note func(string)) ([]*Group, error) {
	deadline := time.Now().Add(wait)
	last := ""
	for {
		groups, err := Collect(ctx, sources, extras)
		var g *Group
		if err == nil {
			g, _, _ = Pick(groups, key, sources)
		} else if errs.KindOf(err) != errs.KindUsage {
			return nil, err
		}
		if g != nil && len(g.Missing()) == 0 {
			return groups, nil
		}
		over := !time.Now().Before(deadline)
		if over {
			if err != nil {
				return nil, err
			}
			return groups, nil
		}
		msg := "waiting for the shards' results in " + strings.Join(sources, ", ")
		if g != nil {
			msg = fmt.Sprintf("waiting for shards %v of %s (until %s)", g.Missing(), g.Label(), deadline.UTC().Format("15:04:05"))
		}
		if msg != last {
			note(msg)
			last = msg
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(pollEvery, time.Until(deadline))):
		}
	}
}

// Missing are the indexes of the shards without a result.
func (g *Group) Missing() []int {
	var out []int
	for i, p := range g.Parts {
		if p == nil {
			out = append(out, i)
		}
	}
	return out
}
