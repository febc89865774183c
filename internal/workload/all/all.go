// Package all is the one list of registered workloads. Adding a workload is
// one package under internal/workload and one line here.
package all

import (
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/fsblog"
	"github.com/tunebench/tunebench/internal/workload/script"
	"github.com/tunebench/tunebench/internal/workload/storage"
	"github.com/tunebench/tunebench/internal/workload/tpcb"
	"github.com/tunebench/tunebench/internal/workload/tpcc"
	"github.com/tunebench/tunebench/internal/workload/tpch"
)

// Registry returns a registry of every workload.
func Registry() *workload.Registry {
	return workload.NewRegistry(
		tpcb.New(),
		tpcc.New(),
		tpch.New(),
		storage.New(),
		fsblog.New(),
		script.New(),
	)
}
