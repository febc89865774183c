// Package all is the one list of database targets tunebench can open.
// Adding a database is one package under internal/target and one line here.
package all

import (
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb"
	"github.com/tunebench/tunebench/internal/target/pg"
)

// Drivers lists the target drivers; the first one that accepts a spec
// opens it (PostgreSQL, the default, accepts every spec: keep it last).
func Drivers() []target.Driver {
	return []target.Driver{
		mariadb.Driver{},
		pg.Driver{},
	}
}
