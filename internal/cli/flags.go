package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"
)

// optionFlags are the flags a command makes from a workload's options of
// one phase: one flag per option, named after it (max_tries: --max-tries).
type optionFlags struct {
	w     workload.Workload
	phase option.Phase
	vals  option.Values
	fs    *pflag.FlagSet
}

// optValue is one option as a flag; the text is checked later, with the
// others (optionFlags.values), so errors come with the option's hint.
type optValue struct {
	o    *option.Option
	vals option.Values
	set  bool
}

func (v *optValue) String() string { return v.vals[v.o.Name] }

func (v *optValue) Set(s string) error {
	if v.o.Kind == option.KindList && v.set {
		s = v.vals[v.o.Name] + "," + s // repeated flags add items
	}
	v.vals[v.o.Name], v.set = s, true
	return nil
}

func (v *optValue) Type() string { return v.o.Kind.TypeName() }

// bindOptions adds the flags of w's options of phase p to fs.
func bindOptions(fs *pflag.FlagSet, w workload.Workload, p option.Phase) *optionFlags {
	f := &optionFlags{w: w, phase: p, vals: option.Values{}, fs: fs}
	set := w.Options().Phase(p)
	for i := range set {
		o := &set[i]
		v := &optValue{o: o, vals: f.vals}
		def := o.DefaultValue()
		if o.DefaultText != "" {
			def = option.Spell(o.DefaultText, option.Flag)
		}
		usage := o.Doc
		if len(o.Enum) > 0 && !strings.Contains(usage, o.Enum[0]) {
			usage += ": " + strings.Join(o.Enum, ", ")
		}
		fl := fs.VarPF(v, o.Flag(), o.Short, usage)
		fl.DefValue = def
		if o.Kind == option.KindBool {
			fl.NoOptDefVal = "true"
		}
		if o.Hidden {
			fl.Hidden = true
		}
	}
	return f
}

// values are the options given, completed with the defaults and checked;
// an error is a usage error that names the flags.
func (f *optionFlags) values() (option.Values, option.Given, error) {
	v := f.vals.Clone()
	given := func(name string) bool {
		fl := f.fs.Lookup(option.FlagName(name))
		return fl != nil && fl.Changed
	}
	if err := workload.Check(f.w, f.phase, v, given); err != nil {
		return nil, nil, usageError(err)
	}
	return v, given, nil
}

// usageError spells an option error for the command line.
func usageError(err error) error {
	if oe, ok := option.As(err); ok {
		msg, hint := oe.Render(option.Flag)
		if hint == "" {
			hint = "see --help for the flags"
		}
		return errs.Usage(hint, "%s", msg)
	}
	return err
}

// connFlags are the connection flags of the commands that use a database.
type connFlags struct {
	dsn, serverDir, database, restartCommand string
	restartTimeout                           time.Duration
}

func (f *connFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.dsn, "dsn", "", "connection string (key=value or postgres:// URL) without a password; default: PG* variables, $TUNEBENCH_DSN")
	fs.StringVar(&f.serverDir, "server-dir", "", "use the managed server in this directory (see tunebench server start)")
	fs.StringVarP(&f.database, "database", "d", "", "database name (overrides the one in --dsn / PGDATABASE)")
	fs.StringVar(&f.restartCommand, "restart-command", "", "shell command that restarts the --dsn server (e.g. 'ssh db1 sudo systemctl restart postgresql'), for --set values that need a restart")
	fs.DurationVar(&f.restartTimeout, "restart-timeout", 0, "how long the --restart-command and the server's return may take together before the restart is given up and the settings changed so far are restored (default "+target.DefaultRestartTimeout.String()+")")
}

// runFlags are the flags every run command has besides the workload's
// options.
type runFlags struct {
	conn       connFlags
	results    resultsFlag
	json       string
	experiment string
	settings   []string
	noSamplers bool
	progress   time.Duration
	cpuProfile string
	hosts      target.HostMetrics
	live       liveFlags
	shard      string
	rendezvous string
	rzTimeout  time.Duration
}

// addRunFlags adds the run flags a workload's capabilities call for: the
// connection, --set and --no-samplers for a workload with a database,
// --progress for one the executor drives.
func addRunFlags(cmd *cobra.Command, w workload.Workload, rf *runFlags) {
	fs := cmd.Flags()
	rf.results.add(fs)
	fs.StringVar(&rf.json, "json", "", "write the run summary as JSON to this file (see docs/json-summary.md)")
	fs.StringVar(&rf.experiment, "experiment", "", "experiment name to file the run under")
	rf.live.add(fs)
	if len(w.Meta().Dialects) > 0 {
		rf.conn.add(fs)
		fs.StringArrayVar(&rf.settings, "set", nil, "server setting name=value for this run, applied with ALTER SYSTEM, verified, restored afterwards (repeatable; needs superuser)")
		fs.BoolVar(&rf.noSamplers, "no-samplers", false, "do not record system, PostgreSQL and driver metrics (docs/metrics.md)")
		addHostFlags(fs, &rf.hosts)
	}
	_, executed := w.Options().Phase(option.PhaseRun).ByRole(option.RoleWorkers)
	if _, sharder := w.(workload.Sharder); executed || sharder {
		fs.StringVar(&rf.rendezvous, "rendezvous", "", "with --shard: meet the other shards in the database under this key (the same for every shard of the run; default $"+envRendezvous+") and start together")
		rf.rzTimeout = 10 * time.Minute
		fs.Var(option.DurationFlag{P: &rf.rzTimeout}, "rendezvous-timeout", "how long a shard waits at the rendezvous for the others")
		fs.StringVar(&rf.shard, "shard", "", "run shard i of N of a run split over N drivers (0 <= i < N; default $"+workload.EnvShard+"); N alone takes i from $"+workload.EnvJobIndex+" (a Kubernetes Indexed Job)")
	}
	if executed {
		rf.progress = time.Second
		fs.VarP(option.SecondsFlag{P: &rf.progress}, "progress", "P", "progress line interval, e.g. 5s (a bare number is seconds, as pgbench -P; 0 = none)")
		fs.StringVar(&rf.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the driver to this file (for tuning tunebench itself)")
		_ = fs.MarkHidden("cpuprofile")
	}
}

// addHostFlags adds the flags that say how the database server's host is
// measured (docs/metrics.md, "The database server's host").
func addHostFlags(fs *pflag.FlagSet, hm *target.HostMetrics) {
	fs.StringVar(&hm.Source, "host-metrics", target.HostAuto,
		"how to measure the database server's host: auto (this machine's /proc when the server runs here), sql (its /proc read through the database: "+
			"a superuser, or pg_read_server_files), the URL of its node_exporter (http://HOST:9100/metrics), or none")
	fs.StringVar(&hm.Disk, "host-disk", "", "the server host's disk as its /proc/diskstats or node_exporter names it (default: the one under the data directory; with node_exporter, all its disks)")
	fs.StringVar(&hm.ContainerURL, "container-metrics", "", "cAdvisor's /metrics URL (or a kubelet's /metrics/cadvisor) of the server's container; with --container")
	fs.StringVar(&hm.Container, "container", "", "the server's container, by name or id, at --container-metrics")
}

// envRendezvous gives --rendezvous's default.
const envRendezvous = "TUNEBENCH_RENDEZVOUS"
