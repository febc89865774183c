// Command tunebench is a database and storage benchmarking lab in one binary.
package main

import (
	"os"

	"github.com/tunebench/tunebench/internal/cli"
)

func main() {
	os.Exit(cli.Main(cli.NewOSState(), os.Args[1:]))
}
