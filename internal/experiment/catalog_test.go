package experiment

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/target/pg"
)

// testCatalog has two workloads shaped like tpcb and tpcc.
func testCatalog() Catalog {
	bench := &Workload{
		Name: "bench", XAxis: "clients", Metric: "tps", Runnable: true,
		Options: []Option{
			{Name: "scale", Kind: KindInt, Default: "1", Min: 1, HasMin: true, Load: true},
			{Name: "clients", Kind: KindInt, Default: "1", Min: 1, HasMin: true},
			{Name: "duration", Kind: KindDuration, Default: "60s"},
			{Name: "transactions", Kind: KindInt, Min: 0, HasMin: true},
			{Name: "warmup", Kind: KindDuration},
			{Name: "rate", Kind: KindFloat, Min: 0, HasMin: true},
			{Name: "script", Kind: KindString, Default: "tpcb-like", Enum: []string{"tpcb-like", "simple-update", "select-only"}},
			{Name: "pipeline", Kind: KindBool},
		},
		RunTime: func(o Options) (time.Duration, bool) {
			if o.Int("transactions") > 0 {
				return 0, false
			}
			return o.Duration("duration") + o.Duration("warmup"), true
		},
		LoadTime:  func(o Options) time.Duration { return time.Duration(o.Int("scale")) * 2 * time.Second },
		DataBytes: func(o Options) int64 { return o.Int("scale") * 16_000_000 },
		Check: func(o Options) error {
			if o.Int("transactions") > 0 && o.Float("rate") > 0 {
				return errors.New("transactions cannot be combined with rate")
			}
			return nil
		},
	}
	oltp := &Workload{
		Name: "oltp", XAxis: "vusers", Metric: "nopm", Runnable: false,
		Options: []Option{
			{Name: "warehouses", Kind: KindInt, Default: "1", Min: 1, HasMin: true, Load: true},
			{Name: "vusers", Kind: KindInt, Default: "1", Min: 1, HasMin: true},
			{Name: "duration", Kind: KindDuration, Default: "2m", Min: 1, HasMin: true},
			{Name: "rampup", Kind: KindDuration},
			{Name: "isolation", Kind: KindString, Default: "read-committed", Enum: []string{"read-committed", "repeatable-read", "serializable"}, Governs: "default_transaction_isolation"},
			{Name: "all_warehouses", Kind: KindBool},
		},
		RunTime: func(o Options) (time.Duration, bool) {
			return o.Duration("duration") + o.Duration("rampup"), true
		},
	}
	return Catalog{"bench": bench, "oltp": oltp}
}

func TestOptionValues(t *testing.T) {
	cases := []struct {
		opt  Option
		in   string
		want string
		err  string
	}{
		{Option{Name: "n", Kind: KindInt, Min: 1, HasMin: true}, "4", "4", ""},
		{Option{Name: "n", Kind: KindInt, Min: 1, HasMin: true}, "0", "", "n must be at least 1, not 0"},
		{Option{Name: "n", Kind: KindInt}, "1_000", "1_000", ""},
		{Option{Name: "n", Kind: KindInt}, "4.5", "", "must be an integer"},
		{Option{Name: "f", Kind: KindFloat, Min: 0, HasMin: true}, "-1", "", "f must not be negative"},
		{Option{Name: "f", Kind: KindFloat}, "1e3", "1e3", ""},
		{Option{Name: "f", Kind: KindFloat}, "NaN", "", "must be a number"},
		{Option{Name: "d", Kind: KindDuration}, "90s", "90s", ""},
		{Option{Name: "d", Kind: KindDuration}, "0", "0", ""},
		{Option{Name: "d", Kind: KindDuration}, "60", "", "a duration with a unit, like 60s"},
		{Option{Name: "d", Kind: KindDuration}, "-5s", "", "d must not be negative"},
		{Option{Name: "d", Kind: KindDuration, Min: 1, HasMin: true}, "0s", "", "d must be at least 1 s"},
		{Option{Name: "d", Kind: KindDuration}, "soon", "", "a duration like 30s"},
		{Option{Name: "b", Kind: KindBool}, "True", "true", ""},
		{Option{Name: "b", Kind: KindBool}, "yes", "", "true or false"},
		{Option{Name: "s", Kind: KindString, Enum: []string{"read-committed", "serializable"}}, "serialisable", "", "(did you mean serializable?)"},
		{Option{Name: "s", Kind: KindString}, "", "", "must not be empty"},
		{Option{Name: "n", Kind: KindInt, Max: 10, HasMax: true}, "11", "", "at most 10"},
	}
	for _, c := range cases {
		got, err := c.opt.CheckValue(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %q: got %q, %v; want an error with %q", c.opt.Name, c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %q: got %q, %v; want %q", c.opt.Name, c.in, got, err, c.want)
		}
	}
	o := Options{"n": "0x10", "d": "1m30s", "b": "true", "f": "2.5"}
	if o.Int("n") != 16 || o.Duration("d") != 90*time.Second || !o.Bool("b") || o.Float("f") != 2.5 || o.Float("n") != 16 || o.Int("missing") != 0 {
		t.Errorf("typed getters: %d %v %v %v", o.Int("n"), o.Duration("d"), o.Bool("b"), o.Float("f"))
	}
}

func TestSuggest(t *testing.T) {
	cases := map[string]string{
		"shared_bufers":  "shared_buffers",
		"work_meme":      "work_mem",
		"max_wal":        "", // two names start with it
		"chekpoint_tmot": "",
		"wokr_mem":       "work_mem",
		"xyz":            "",
	}
	names := pg.Catalog{}.SettingNames()
	for in, want := range cases {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
	if d := editDistance("ab", "ba"); d != 1 {
		t.Errorf("transposition distance %d", d)
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("kitten/sitting distance %d", d)
	}
}

// pgSettings checks the test files' setting names against PostgreSQL's
// catalogue, as the CLI does for a PostgreSQL target.
var pgSettings = WithSettings(pg.Catalog{})
