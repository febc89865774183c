package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
)

// Shard is one part of a run split over Count driver processes, perhaps on
// as many machines (--shard i/N; a Kubernetes Indexed Job's pods). Index
// is 0-based, as a Job's completion index is. Each shard runs its own
// deterministic part of the work; `tunebench results merge` makes one run
// of the parts.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// EnvShard is the environment variable that gives --shard's default;
// EnvJobIndex is a Kubernetes Indexed Job pod's completion index, taken as
// the shard's index when only N is given.
const (
	EnvShard    = "TUNEBENCH_SHARD"
	EnvJobIndex = "JOB_COMPLETION_INDEX"
)

// ParseShard reads a --shard value: "i/N" (0 <= i < N), or "N" with the
// index from $JOB_COMPLETION_INDEX. An empty value is no shard (Count 0).
func ParseShard(s string, getenv func(string) string) (Shard, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Shard{}, nil
	}
	bad := func(format string, a ...any) (Shard, error) {
		return Shard{}, errs.Usage("give --shard i/N with 0 <= i < N (e.g. --shard 0/4 ... --shard 3/4), or --shard N in a Kubernetes Indexed Job (the index comes from $"+EnvJobIndex+")",
			"bad --shard %q: "+format, append([]any{s}, a...)...)
	}
	idx, count, split := strings.Cut(s, "/")
	if !split {
		count = idx
		if idx = strings.TrimSpace(getenv(EnvJobIndex)); idx == "" {
			return bad("no index: $%s is not set", EnvJobIndex)
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 {
		return bad("the shard count must be a whole number of 1 or more")
	}
	i, err := strconv.Atoi(strings.TrimSpace(idx))
	if err != nil || i < 0 || i >= n {
		return bad("the index %q is not between 0 and %d", idx, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// On reports whether the run is a shard of a split run.
func (s Shard) On() bool { return s.Count > 0 }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Share is the shard's part of total things (clients, streams): total/N,
// one more for the first total%N shards.
func (s Shard) Share(total int64) int64 {
	n := int64(s.Count)
	share := total / n
	if int64(s.Index) < total%n {
		share++
	}
	return share
}

// Offset is how many of total things the shards before this one take: its
// part is [Offset, Offset+Share).
func (s Shard) Offset(total int64) int64 {
	n, i := int64(s.Count), int64(s.Index)
	return i*(total/n) + min(i, total%n)
}

// Sharder is implemented by a workload whose shards need more than the
// executor's split (SplitByRoles): tpcc's terminals and their home
// warehouses, tpch's streams. ShardOptions returns the shard's options
// and a line saying which part it runs.
type Sharder interface {
	ShardOptions(sh Shard, v option.Values) (option.Values, string, error)
}

// ShardOptions is the options of shard sh of a run of w with options v,
// and its part: the workload's own split when it has one, else
// SplitByRoles. A workload the executor does not drive (it measures
// itself) and that has no split of its own cannot be sharded.
func ShardOptions(w Workload, sh Shard, v option.Values) (option.Values, string, error) {
	if sd, ok := w.(Sharder); ok {
		return sd.ShardOptions(sh, v)
	}
	return SplitByRoles(w.Meta().Name, w.Options().Phase(option.PhaseRun), sh, v)
}

// seedMix makes each shard's seed differ from the others' (and from the
// unsharded run's) when a seed is given: the same seed everywhere would
// send the same random keys from every shard.
const seedMix = 0x9E3779B97F4A7C15

// SplitByRoles splits a run the executor drives by its options' roles:
// the clients (the first Workers%N shards take one more), the threads
// (at most the shard's clients, at least one), the open-loop rate (in
// proportion to the clients) and the seed (a given seed mixed with the
// index); the checks after the run are left to the merge (they see what
// every shard did). Per-client counts (pgbench -t) stay per client.
func SplitByRoles(name string, set option.Set, sh Shard, v option.Values) (option.Values, string, error) {
	wo, ok := set.ByRole(option.RoleWorkers)
	if !ok {
		return nil, "", errs.Usage("run it unsharded, on one machine",
			"%s cannot be sharded: it has no clients to split", name)
	}
	out := v.Clone()
	workers := v.Int(wo.Name)
	if workers < int64(sh.Count) {
		return nil, "", errs.Usage(fmt.Sprintf("give --%s %d or more, or fewer shards", flagName(wo.Name), sh.Count),
			"%d shards need at least one of the %d %s each", sh.Count, workers, strings.ReplaceAll(wo.Name, "_", " "))
	}
	mine := sh.Share(workers)
	first := sh.Offset(workers)
	out[wo.Name] = strconv.FormatInt(mine, 10)
	part := fmt.Sprintf("shard %s: %s %d-%d of %d", sh, strings.ReplaceAll(wo.Name, "_", " "), first, first+mine-1, workers)
	if to, ok := set.ByRole(option.RoleThreads); ok {
		if t := v.Int(to.Name); t > 0 {
			out[to.Name] = strconv.FormatInt(max(1, min(mine, sh.Share(t))), 10)
		}
	}
	if ro, ok := set.ByRole(option.RoleRate); ok {
		if r := v.Float(ro.Name); r > 0 {
			mr := r * float64(mine) / float64(workers)
			out[ro.Name] = strconv.FormatFloat(mr, 'g', -1, 64)
			part += fmt.Sprintf(", rate %s of %s/s", strconv.FormatFloat(mr, 'g', 6, 64), strconv.FormatFloat(r, 'g', 6, 64))
		}
	}
	if no, ok := set.ByRole(option.RoleNoCheck); ok && !v.Bool(no.Name) {
		// The checks see the whole database, which every shard changes:
		// they run once on the merged run (results merge), not per shard.
		out[no.Name] = "true"
		part += "; checks at the merge"
	}
	if so, ok := set.ByRole(option.RoleSeed); ok {
		if s := v.Int(so.Name); s != 0 {
			mixed := s ^ int64(uint64(sh.Index+1)*seedMix)
			if mixed == 0 { // 0 means "from the clock": not reproducible
				mixed = int64(seedMix & (1<<63 - 1))
			}
			out[so.Name] = strconv.FormatInt(mixed, 10)
		}
	}
	return out, part, nil
}

func flagName(opt string) string { return strings.ReplaceAll(opt, "_", "-") }
