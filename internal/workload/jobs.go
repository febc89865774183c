package workload

import "github.com/tunebench/tunebench/internal/option"

// JobsOptions are a load's --jobs, with what they do in that load, and its
// old name --load-workers (hidden, still read).
func JobsOptions(what string) option.Set {
	return option.Set{
		{Name: "jobs", Short: "j", Kind: option.KindInt, Default: "0", HasMin: true, Load: true, FlagOnly: true,
			DefaultText: "one per CPU of the server when it runs on this machine (a managed server in a hardware envelope: the envelope's), else one per CPU here",
			Doc:         "parallel connections of the load: " + what},
		{Name: "load_workers", Kind: option.KindInt, Default: "0", HasMin: true, Load: true, FlagOnly: true, Hidden: true,
			Doc: "the old name of --jobs"},
	}
}

// Jobs is --jobs, or --load-workers when only that is given; 0 for the
// default.
func Jobs(o option.Values) int {
	if j := o.Int("jobs"); j > 0 {
		return int(j)
	}
	return int(o.Int("load_workers"))
}
