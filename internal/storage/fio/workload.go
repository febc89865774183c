package fio

import "github.com/tunebench/tunebench/internal/workload"

// Workload registers the fio-driven storage baseline in the workload
// registry (`tunebench storage`).
type Workload struct{}

// Meta describes the workload.
func (Workload) Meta() workload.Meta {
	return workload.Meta{Name: "storage", Description: "fio storage baseline: sequential/random read and write, 50/50 mix (runs fio, reads its JSON)", Version: "1"}
}
