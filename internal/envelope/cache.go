package envelope

import (
	"io/fs"
	"path/filepath"

	"github.com/tunebench/tunebench/internal/errs"
)

// EvictCache writes back and drops the page cache of every regular file
// under the paths (files or directories), and returns how many bytes of
// files it went through. Call it before a run in an envelope: a page
// stays charged to the cgroup that first read or wrote it, so data cached
// while loading outside the envelope would be read inside it from a cache
// the memory limit never counts. Only these files are affected, unlike
// /proc/sys/vm/drop_caches.
func EvictCache(paths ...string) (int64, error) {
	var total int64
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			n, err := dropFileCache(path)
			total += n
			return err
		})
		if err != nil {
			return total, errs.Wrap(errs.KindEnvironment, err, "", "drop the page cache of %s", root)
		}
	}
	return total, nil
}
