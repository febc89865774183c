package merge

import (
	"context"
	"fmt"
	"strings"

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
