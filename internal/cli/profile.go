package cli

import (
	"os"
	"runtime/pprof"

	"github.com/tunebench/tunebench/internal/errs"
)

// startCPUProfile profiles the driver itself (hidden flag, for tuning tunebench).
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, errs.Wrap(errs.KindUsage, err, "choose a writable path", "cannot create %s", path)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
