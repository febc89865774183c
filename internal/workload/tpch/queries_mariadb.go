package tpch

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tunebench/tunebench/internal/workload/tpch/qgen"
)

// The 22 queries in MariaDB's SQL: qgen writes them for PostgreSQL, and
// these are the rewrites MariaDB 10.11 needs, all in one place. MariaDB
// takes the rest as it is: date literals, EXTRACT(YEAR FROM d),
// SUBSTRING(s FROM a FOR b), a common table expression with a column list
// (Q15's view), LIMIT.

// pgInterval is a PostgreSQL interval literal of one unit
// (interval '90 day', interval '3 month').
var pgInterval = regexp.MustCompile(`interval '(\d+) (day|month|year)'`)

// mariaRewrites are the textual rewrites of single queries: each must
// apply (mariaQuery panics otherwise, and TestMariaQueries runs them all).
var mariaRewrites = map[int][][2]string{
	// A derived table's column list, "as c_orders (c_custkey, c_count)",
	// comes with MariaDB 11.7: the count is named inside instead.
	13: {
		{"count(o_orderkey)\n", "count(o_orderkey) as c_count\n"},
		{") as c_orders (c_custkey, c_count)", ") as c_orders"},
	},
}

// mariaQuery is q in MariaDB's SQL.
func mariaQuery(q qgen.Query) qgen.Query {
	sql := pgInterval.ReplaceAllString(q.SQL, "interval $1 $2")
	for _, rw := range mariaRewrites[q.N] {
		if !strings.Contains(sql, rw[0]) {
			panic(fmt.Sprintf("tpch: Q%d has no %q to rewrite for MariaDB", q.N, rw[0]))
		}
		sql = strings.Replace(sql, rw[0], rw[1], 1)
	}
	q.SQL = sql
	return q
}
