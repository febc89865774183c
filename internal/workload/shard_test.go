package workload

import (
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/option"
)

func TestParseShard(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for in, want := range map[string]Shard{"": {}, "0/4": {0, 4}, "3/4": {3, 4}, " 1 / 2 ": {1, 2}} {
		if got, err := ParseShard(in, getenv); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"4/4", "-1/4", "a/4", "1/0", "1/x", "4"} {
		if _, err := ParseShard(in, getenv); err == nil || !strings.Contains(err.Error(), "bad --shard") {
			t.Errorf("ParseShard(%q): %v, want a usage error", in, err)
		}
	}
	env[EnvJobIndex] = "2"
	if got, err := ParseShard("4", getenv); err != nil || got != (Shard{2, 4}) {
		t.Errorf("with the Job's index: %v %v", got, err)
	}
}

// TestShareOffset: the shards' parts cover every item once, in order.
func TestShareOffset(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		for total := int64(n); total < 30; total++ {
			next := int64(0)
			for i := 0; i < n; i++ {
				sh := Shard{i, n}
				if sh.Offset(total) != next {
					t.Fatalf("%d of %d items: shard %d starts at %d, want %d", n, total, i, sh.Offset(total), next)
				}
				next += sh.Share(total)
			}
			if next != total {
				t.Fatalf("%d shards cover %d of %d", n, next, total)
			}
		}
	}
}

func TestSplitByRoles(t *testing.T) {
	set := option.Set{
		{Name: "clients", Kind: option.KindInt, Role: option.RoleWorkers},
		{Name: "jobs", Kind: option.KindInt, Role: option.RoleThreads},
		{Name: "rate", Kind: option.KindFloat, Role: option.RoleRate},
		{Name: "seed", Kind: option.KindInt, Role: option.RoleSeed},
		{Name: "scale", Kind: option.KindInt},
		{Name: "no_check", Kind: option.KindBool, Role: option.RoleNoCheck},
	}
	v := option.Values{"clients": "8", "jobs": "4", "rate": "1000", "seed": "42", "scale": "10"}
	var clients int64
	rate := 0.0
	seeds := map[string]bool{}
	for i := 0; i < 3; i++ {
		out, part, err := SplitByRoles("tpcb", set, Shard{i, 3}, v)
		if err != nil {
			t.Fatal(err)
		}
		clients += out.Int("clients")
		rate += out.Float("rate")
		seeds[out["seed"]] = true
		if j := out.Int("jobs"); j < 1 || j > out.Int("clients") {
			t.Errorf("shard %d: %d threads for %d clients", i, j, out.Int("clients"))
		}
		if out["scale"] != "10" || !strings.HasPrefix(part, "shard ") || !out.Bool("no_check") || !strings.Contains(part, "checks at the merge") {
			t.Errorf("shard %d: %v %q", i, out, part)
		}
	}
	if clients != 8 || rate < 999.999 || rate > 1000.001 || len(seeds) != 3 || seeds["42"] {
		t.Errorf("the shards add up to %d clients, rate %v, seeds %v", clients, rate, seeds)
	}
	if v["clients"] != "8" {
		t.Error("the run's own options were changed")
	}
	if _, _, err := SplitByRoles("tpcb", set, Shard{0, 9}, v); err == nil || !strings.Contains(err.Error(), "9 shards need at least one") {
		t.Errorf("more shards than clients: %v", err)
	}
}
