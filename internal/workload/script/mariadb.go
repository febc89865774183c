package script

import (
	"context"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

// Script files on MariaDB: the meta-commands and the expression language
// are the same; the SQL is the user's, in MariaDB's dialect. An init file
// runs on an admin connection, and :scale comes from pgbench_branches when
// the database has it.

// DialectMariaDB is the dialect name of MariaDB targets.
const DialectMariaDB = "mariadb"

func admin(ctx context.Context, t target.Target) (target.Admin, error) {
	a, ok := t.(target.Admins)
	if !ok {
		return nil, errs.Usage("run scripts on PostgreSQL or MariaDB", "the target %s has no admin connections", t.Describe())
	}
	return a.Admin(ctx)
}

func adminExec(ctx context.Context, t target.Target) (func(context.Context, string) error, func(), error) {
	a, err := admin(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, q string) error {
		_, err := a.Exec(ctx, q)
		return err
	}, func() { _ = a.Close() }, nil
}

func adminBranches(ctx context.Context, t target.Target) (int64, error) {
	a, err := admin(ctx, t)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	var has int64
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgbench_branches'").Scan(&has); err != nil || has == 0 {
		return 0, err
	}
	var n int64
	err = a.QueryRow(ctx, "SELECT COUNT(*) FROM pgbench_branches").Scan(&n)
	return n, err
}
