package workload

import (
	"os"
	"path/filepath"

	"github.com/tunebench/tunebench/internal/errs"
)

// Dir is the directory a filesystem workload works in, absolute: the dir
// option as given, or when that is empty the target's scratch directory sub
// (made if missing; only a managed server has one). what names what goes
// there, for the error. Whether the directory exists is the caller's check.
func Dir(env *RunEnv, given, sub, what string) (string, error) {
	if given == "" {
		if env.Target == nil {
			return "", errs.Usage("give --dir D: a directory on the filesystem to test", "no --dir")
		}
		d, ok := env.Target.ScratchDir(sub)
		if !ok && env.Target.Remote() {
			return "", errs.Usage("give the workload option dir: a directory on this machine, or run tunebench on the server's machine to test its disks",
				"no directory for %s: the server is on another machine, and its filesystem cannot be reached from here", what)
		}
		if !ok {
			return "", errs.Usage("give the workload option dir (the target is not a managed server)", "no directory for %s", what)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", errs.Wrap(errs.KindUsage, err, "give the workload option dir", "cannot make %s", d)
		}
		given = d
	}
	abs, err := filepath.Abs(given)
	if err != nil {
		return "", errs.Usage("give a valid --dir", "--dir %s: %v", given, err)
	}
	return abs, nil
}
