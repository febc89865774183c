package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PlanVersion is the version of the plan JSON (docs/experiments.md).
const PlanVersion = 1

// DefaultLabel is the label of the only configuration of a matrix that has
// nothing but the x axis.
const DefaultLabel = "default"

// Plan is an expanded experiment: its configurations and every run in
// execution order. It is stored as JSON with the experiment.
type Plan struct {
	Version     int       `json:"version"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Workload    string    `json:"workload"`
	Metric      string    `json:"metric"`
	XAxis       string    `json:"x_axis"`
	XValues     []float64 `json:"x_values"`
	Seed        int64     `json:"seed"`
	Order       string    `json:"order"`
	Reset       string    `json:"reset"`
	ResetEvery  string    `json:"reset_every,omitempty"`
	Repetitions int       `json:"repetitions"`
	// Shards splits each run over this many shards, merged into the run
	// (the file's shards:); 0 for whole runs.
	Shards     int     `json:"shards,omitempty"`
	WarmupRuns int     `json:"warmup_runs"`
	CooldownS  float64 `json:"cooldown_s"`
	TargetKind string  `json:"target"` // "managed" or "dsn" ("managed+dsn": named targets of both kinds)
	// Targets are the named targets matrix.target compares (targets:), in
	// its order; none for a file with one target.
	Targets      []PlanTarget `json:"targets,omitempty"`
	Database     string       `json:"database"`
	BaseSettings []Setting    `json:"base_settings,omitempty"`
	// BaseKernel are the kernel settings of every run (target.kernel).
	BaseKernel []Setting `json:"base_kernel,omitempty"`
	// Hooks are the commands run at fixed points (not in the fingerprint:
	// they do not identify the runs).
	Hooks       []Hook    `json:"hooks,omitempty"`
	Dimensions  []PlanDim `json:"dimensions"`
	Baseline    string    `json:"baseline"` // label of the baseline configuration
	Configs     []Config  `json:"configurations"`
	Runs        []Run     `json:"runs"`
	Estimate    Estimate  `json:"estimate"`
	Fingerprint string    `json:"fingerprint"`
	// OptionNames are the workload's options when the plan was made (not in
	// the fingerprint): a resume by a newer tunebench tells its new options
	// by them (SameRunsAs).
	OptionNames []string `json:"option_names,omitempty"`

	// Not stored: what a freshly built plan knows besides.
	workload  *Workload
	spec      *Spec
	costs     Costs
	xOpt      *Option
	loadNames []string
}

// PlanDim is a matrix dimension as stored in the plan.
type PlanDim struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"` // "setting", "option" or "data_dir"
	Values []string `json:"values"`
	XAxis  bool     `json:"x_axis,omitempty"`
}

// Config is one configuration: a combination of matrix values, the x axis
// excepted.
type Config struct {
	Index    int       `json:"index"`
	Label    string    `json:"label"`
	Values   []KV      `json:"values"`   // matrix values except the x axis, in matrix order
	Settings []Setting `json:"settings"` // its named target's settings, then its matrix settings
	// Target is the named target of the configuration (matrix.target);
	// "" for a file with one target.
	Target string `json:"target,omitempty"`
	// Kernel are the matrix kernel settings of this configuration
	// (matrix.kernel).
	Kernel   []Setting `json:"kernel,omitempty"`
	DataDir  string    `json:"data_dir,omitempty"`
	Storage  string    `json:"storage,omitempty"`  // the storage layout (matrix.storage)
	Envelope string    `json:"envelope,omitempty"` // the hardware envelope (matrix.envelope)
	Load     Options   `json:"load"`               // load options (defaults included)
	Options  Options   `json:"options"`            // run options without the x axis (defaults included)
	Baseline bool      `json:"baseline,omitempty"`
}

// LayoutPrefix and EnvelopePrefix mark a Config's DataDir that names the
// storage layout the Lab makes the server on (matrix.storage) and the
// hardware envelope it starts it in (matrix.envelope): each distinct pair
// gets a server of its own.
const (
	LayoutPrefix   = "layout:"
	EnvelopePrefix = "envelope:"
	// configPrefix makes the group of one configuration (a layout made
	// fresh for it).
	configPrefix = "config:"
)

// GroupKey is the DataDir of a configuration with a layout or an envelope.
func GroupKey(storage, envelope string) string {
	var parts []string
	if storage != "" {
		parts = append(parts, LayoutPrefix+storage)
	}
	if envelope != "" {
		parts = append(parts, EnvelopePrefix+envelope)
	}
	return strings.Join(parts, " ")
}

// ParseGroup reads a DataDir made by GroupKey (ok false for a plain
// directory).
func ParseGroup(dataDir string) (storage, envelope string, ok bool) {
	for _, f := range strings.Fields(dataDir) {
		switch {
		case strings.HasPrefix(f, LayoutPrefix):
			storage, ok = strings.TrimPrefix(f, LayoutPrefix), true
		case strings.HasPrefix(f, EnvelopePrefix):
			envelope, ok = strings.TrimPrefix(f, EnvelopePrefix), true
		case strings.HasPrefix(f, configPrefix):
		default:
			return "", "", false
		}
	}
	return storage, envelope, ok
}

// Run is one planned run.
type Run struct {
	Index      int     `json:"index"` // position in execution order (store: plan_index)
	Config     int     `json:"config"`
	Label      string  `json:"label"`
	X          float64 `json:"x"`
	Repetition int     `json:"repetition"` // 1-based; warm-up runs count separately
	Warmup     bool    `json:"warmup,omitempty"`
	Block      int     `json:"block"`            // runs of one block share one application of settings
	Target     string  `json:"target,omitempty"` // its configuration's named target
	Seed       int64   `json:"seed"`
}

// loadKey identifies the data a configuration needs loaded.
func (p *Plan) loadKey(c *Config) string {
	return c.DataDir + "\x00" + c.Load.Text(p.loadNames)
}

// restartKey is the values of the settings that need a restart.
func (p *Plan) restartKey(c *Config) string {
	var parts []string
	if c.Target != "" {
		// The configurations of one named target run together: a
		// change of target on a shared server restores the settings.
		parts = append(parts, "target="+c.Target)
	}
	for _, s := range c.Settings {
		if p.spec.needsRestartOn(c.Target, s.Name) {
			parts = append(parts, s.Name+"="+s.Value)
		}
	}
	return strings.Join(parts, " ")
}

// order lays the runs out in execution order.
//
// Whatever the order, runs are grouped by data directory (one server at a
// time) and then by loaded data (one load each), because both are expensive.
// Within a load group:
//   - sequential: configurations in matrix order, then x values ascending,
//     the repetitions of one x value back to back;
//   - random (default): configurations are grouped by the values of their
//     settings that need a restart (shared_buffers, ...); the groups are
//     shuffled and the configurations within each group too, so a restart
//     happens only when such a value changes; the runs of a configuration
//     (x values x repetitions) are shuffled;
//   - rounds: like random, but each repetition is a round over every
//     configuration in a new shuffled order (drift is spread over all
//     configurations, at the cost of applying settings again every round).
//
// Warm-up runs open every block (one application of a configuration's
// settings), at the block's largest x value.
func (p *Plan) order(xVals []string) {
	rng := newRNG(p.Seed)
	shuffle := p.Order != OrderSequential

	// Group configurations: data dir -> load key -> restart key -> configs.
	type group struct {
		key   string
		items []int
	}
	var dirs []*group
	find := func(gs *[]*group, key string) *group {
		for _, g := range *gs {
			if g.key == key {
				return g
			}
		}
		g := &group{key: key}
		*gs = append(*gs, g)
		return g
	}
	for i := range p.Configs {
		g := find(&dirs, p.Configs[i].DataDir)
		g.items = append(g.items, i)
	}
	if shuffle {
		rng.shuffle(len(dirs), func(i, j int) { dirs[i], dirs[j] = dirs[j], dirs[i] })
	}
	xs := make([]int, len(xVals))
	for i := range xs {
		xs[i] = i
	}
	sort.SliceStable(xs, func(a, b int) bool { return p.XValues[xs[a]] < p.XValues[xs[b]] })
	maxX := p.XValues[xs[len(xs)-1]]

	block := 0
	emitBlock := func(ci int, pairs [][2]int) { // pairs of (x index, repetition)
		c := &p.Configs[ci]
		for w := 1; w <= p.WarmupRuns; w++ {
			p.Runs = append(p.Runs, Run{Config: ci, Label: c.Label, X: maxX, Repetition: w, Warmup: true, Block: block, Target: c.Target})
		}
		for _, pr := range pairs {
			p.Runs = append(p.Runs, Run{Config: ci, Label: c.Label, X: p.XValues[pr[0]], Repetition: pr[1], Block: block, Target: c.Target})
		}
		block++
	}
	for _, d := range dirs {
		var loads []*group
		for _, ci := range d.items {
			k := p.loadKey(&p.Configs[ci])
			g := find(&loads, k)
			g.items = append(g.items, ci)
		}
		if shuffle {
			rng.shuffle(len(loads), func(i, j int) { loads[i], loads[j] = loads[j], loads[i] })
		}
		for _, l := range loads {
			// Configurations in the order they run, per round.
			arrange := func() []int {
				if !shuffle {
					return append([]int{}, l.items...)
				}
				var rgs []*group
				for _, ci := range l.items {
					g := find(&rgs, p.restartKey(&p.Configs[ci]))
					g.items = append(g.items, ci)
				}
				rng.shuffle(len(rgs), func(i, j int) { rgs[i], rgs[j] = rgs[j], rgs[i] })
				var out []int
				for _, g := range rgs {
					items := append([]int{}, g.items...)
					rng.shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
					out = append(out, items...)
				}
				return out
			}
			if p.Order == OrderRounds {
				for rep := 1; rep <= p.Repetitions; rep++ {
					for _, ci := range arrange() {
						var pairs [][2]int
						for _, xi := range xs {
							pairs = append(pairs, [2]int{xi, rep})
						}
						rng.shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
						emitBlock(ci, pairs)
					}
				}
				continue
			}
			for _, ci := range arrange() {
				var pairs [][2]int
				for _, xi := range xs {
					for rep := 1; rep <= p.Repetitions; rep++ {
						pairs = append(pairs, [2]int{xi, rep})
					}
				}
				if shuffle {
					rng.shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
				}
				emitBlock(ci, pairs)
			}
		}
	}
	for i := range p.Runs {
		p.Runs[i].Index = i
		p.Runs[i].Seed = runSeed(p.Seed, i)
	}
}

// RunOptions returns the full run options of run i: the configuration's
// options with the x axis value.
func (p *Plan) RunOptions(i int) Options {
	r := p.Runs[i]
	o := p.Configs[r.Config].Options.Clone()
	if p.XAxis != "" {
		o[p.XAxis] = p.FormatX(r.X)
	}
	return o
}

// FormatX renders an x value as option text.
func (p *Plan) FormatX(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// Counted returns the number of counted (not warm-up) runs.
func (p *Plan) Counted() int {
	n := 0
	for _, r := range p.Runs {
		if !r.Warmup {
			n++
		}
	}
	return n
}

// Spec returns the spec the plan was built from (nil for a decoded plan).
func (p *Plan) Spec() *Spec { return p.spec }

// WorkloadSpec returns the workload description (nil for a decoded plan).
func (p *Plan) WorkloadSpec() *Workload { return p.workload }

// SetCosts replaces the cost model used for estimates.
func (p *Plan) SetCosts(c Costs) {
	p.costs = c
	p.Estimate = p.EstimateFor(nil)
}

// JSON encodes the plan.
func (p *Plan) JSON() ([]byte, error) { return json.Marshal(p) }

// DecodePlan reads a stored plan.
func DecodePlan(b []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("stored plan is not valid: %w", err)
	}
	if p.Version != PlanVersion {
		return nil, fmt.Errorf("stored plan has version %d, this tunebench reads version %d", p.Version, PlanVersion)
	}
	return &p, nil
}

// describeRun is "LABEL clients=4 rep 2" (or "warm-up 1").
func (p *Plan) describeRun(i int) string {
	r := p.Runs[i]
	s := r.Label
	if p.XAxis != "" {
		s += " " + p.XAxis + "=" + p.FormatX(r.X)
	}
	if r.Warmup {
		return s + fmt.Sprintf(" warm-up %d", r.Repetition)
	}
	return s + fmt.Sprintf(" rep %d", r.Repetition)
}

// DescribeRun is describeRun for callers.
func (p *Plan) DescribeRun(i int) string { return p.describeRun(i) }

// rng is a small deterministic generator (splitmix64): plans must come out
// the same from the same file and seed on any Go version (resume depends on
// it), so no library generator whose output may change is used.
type rng struct{ state uint64 }

func newRNG(seed int64) *rng { return &rng{state: uint64(seed) ^ 0x74756e6562656e63} }

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a value in [0, n) (n > 0), without modulo bias.
func (r *rng) intn(n int) int {
	un := uint64(n)
	limit := math.MaxUint64 - math.MaxUint64%un
	for {
		v := r.next()
		if v < limit {
			return int(v % un)
		}
	}
}

// shuffle is Fisher-Yates.
func (r *rng) shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.intn(i+1))
	}
}

// runSeed derives run i's workload seed from the experiment seed: stable,
// distinct per run, never 0 (0 means "from the clock" to the runners).
func runSeed(seed int64, i int) int64 {
	r := newRNG(seed + int64(i)*0x5851f42d4c957f2d)
	r.next()
	v := int64(r.next() & math.MaxInt64)
	if v == 0 {
		v = 1
	}
	return v
}

// durationS renders seconds as a rounded duration.
func durationS(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}
