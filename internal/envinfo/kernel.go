package envinfo

import (
	"sort"
	"strings"
)

// KernelSetting is a kernel setting an experiment set: a sysctl key,
// transparent_hugepage[.defrag], or a block queue setting of one device.
type KernelSetting struct {
	Key      string `json:"key"`
	Dev      string `json:"dev,omitempty"` // queue settings: the device
	Value    string `json:"value"`
	Previous string `json:"previous"` // the machine's value before
}

// KernelLine says the kernel settings in one line, sorted by key:
// "vm.dirty_ratio=10 (was 20), queue.nr_requests=64 on vda (was 256)";
// "" when the run had none.
func (s *Snapshot) KernelLine() string {
	if s == nil || len(s.Kernel) == 0 {
		return ""
	}
	ks := append([]KernelSetting(nil), s.Kernel...)
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].Key != ks[j].Key {
			return ks[i].Key < ks[j].Key
		}
		return ks[i].Dev < ks[j].Dev
	})
	parts := make([]string, len(ks))
	for i, k := range ks {
		v := k.Key + "=" + k.Value
		if k.Dev != "" {
			v += " on " + k.Dev
		}
		parts[i] = v + " (was " + k.Previous + ")"
	}
	return strings.Join(parts, ", ")
}

// KernelValues are the kernel settings by key (a queue key once per
// device: KEY@DEV), for comparisons.
func (s *Snapshot) KernelValues() map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for _, k := range s.Kernel {
		key := k.Key
		if k.Dev != "" {
			key += "@" + k.Dev
		}
		out[key] = k.Value
	}
	return out
}
