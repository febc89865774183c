package kernel

import (
	"os"

	"github.com/tunebench/tunebench/internal/machine"
)

// HugePages are the counters of /proc/meminfo's default-size huge pages.
type HugePages struct {
	Total, Free, Rsvd, Surp int64
	SizeKB                  int64
}

// InUse counts the pages mapped or reserved by processes (a server that
// mapped its shared memory with MAP_HUGETLB reserves them at start and
// faults them in as it touches them).
func (h HugePages) InUse() int64 { return h.Total - h.Free + h.Rsvd }

// ReadHugePages reads /proc/meminfo under the machine's root.
func (m Machine) ReadHugePages() (HugePages, error) {
	b, err := os.ReadFile(m.path("proc/meminfo"))
	if err != nil {
		return HugePages{}, err
	}
	mem, err := machine.ParseMeminfo(b)
	if err != nil {
		return HugePages{}, err
	}
	return HugePages{Total: int64(mem.HugePagesTotal), Free: int64(mem.HugePagesFree), Rsvd: int64(mem.HugePagesRsvd),
		Surp: int64(mem.HugePagesSurp), SizeKB: int64(mem.HugePageSize / 1024)}, nil
}
