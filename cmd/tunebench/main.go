// Command tunebench is a database and storage benchmarking lab in one binary.
package main

import (
	"os"

	"github.com/tunebench/tunebench/internal/cli"
	targets "github.com/tunebench/tunebench/internal/target/all"
	workloads "github.com/tunebench/tunebench/internal/workload/all"
)

func main() {
	os.Exit(cli.Main(cli.NewOSState(workloads.Registry(), targets.Drivers()), os.Args[1:]))
}
