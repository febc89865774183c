#!/usr/bin/env python3
"""Compute TPC-H reference answers for tunebench's answer validation.

Two jobs, both writing the stored form that internal/workload/tpch/answers
embeds (one text file per scale factor, described in that package's doc):

  compute   generate the tables with tpchgen-cli (byte-identical to TPC
            dbgen), load the .tbl files into an in-memory DuckDB, run the 22
            queries with the specification's validation parameters, and
            write the answers:
                tpch-answers.py --sf 0.01 --out sf0.01.txt

  official  convert the TPC's SF 1 qualification answers (dbgen/answers/
            q1.out .. q22.out of the TPC tools) into the stored form:
                tpch-answers.py --official DIR --out sf1.txt
            DIR holds q1.out .. q22.out, or is a git directory of the TPC
            tools (the files are then read with git show HEAD:dbgen/answers/).

Run it with the oracle environment's interpreter (scripts/tpch-oracle.sh
creates it): .oracle/bin/python scripts/tpch-answers.py ...

Note: DuckDB's own CALL dbgen() makes different text columns than TPC dbgen,
so its tpch_answers() are not used: the tables always come from tpchgen-cli.
"""

import argparse
import datetime
import decimal
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------
# Schema (TPC-H clause 1.4). CHAR(n) is stored as VARCHAR by DuckDB (no
# padding), which is what the comparison wants anyway.

TABLES = {
    "region": [
        ("r_regionkey", "INTEGER"), ("r_name", "VARCHAR"), ("r_comment", "VARCHAR"),
    ],
    "nation": [
        ("n_nationkey", "INTEGER"), ("n_name", "VARCHAR"), ("n_regionkey", "INTEGER"),
        ("n_comment", "VARCHAR"),
    ],
    "supplier": [
        ("s_suppkey", "INTEGER"), ("s_name", "VARCHAR"), ("s_address", "VARCHAR"),
        ("s_nationkey", "INTEGER"), ("s_phone", "VARCHAR"), ("s_acctbal", "DECIMAL(15,2)"),
        ("s_comment", "VARCHAR"),
    ],
    "customer": [
        ("c_custkey", "INTEGER"), ("c_name", "VARCHAR"), ("c_address", "VARCHAR"),
        ("c_nationkey", "INTEGER"), ("c_phone", "VARCHAR"), ("c_acctbal", "DECIMAL(15,2)"),
        ("c_mktsegment", "VARCHAR"), ("c_comment", "VARCHAR"),
    ],
    "part": [
        ("p_partkey", "INTEGER"), ("p_name", "VARCHAR"), ("p_mfgr", "VARCHAR"),
        ("p_brand", "VARCHAR"), ("p_type", "VARCHAR"), ("p_size", "INTEGER"),
        ("p_container", "VARCHAR"), ("p_retailprice", "DECIMAL(15,2)"), ("p_comment", "VARCHAR"),
    ],
    "partsupp": [
        ("ps_partkey", "INTEGER"), ("ps_suppkey", "INTEGER"), ("ps_availqty", "INTEGER"),
        ("ps_supplycost", "DECIMAL(15,2)"), ("ps_comment", "VARCHAR"),
    ],
    "orders": [
        ("o_orderkey", "BIGINT"), ("o_custkey", "INTEGER"), ("o_orderstatus", "VARCHAR"),
        ("o_totalprice", "DECIMAL(15,2)"), ("o_orderdate", "DATE"), ("o_orderpriority", "VARCHAR"),
        ("o_clerk", "VARCHAR"), ("o_shippriority", "INTEGER"), ("o_comment", "VARCHAR"),
    ],
    "lineitem": [
        ("l_orderkey", "BIGINT"), ("l_partkey", "INTEGER"), ("l_suppkey", "INTEGER"),
        ("l_linenumber", "INTEGER"), ("l_quantity", "DECIMAL(15,2)"),
        ("l_extendedprice", "DECIMAL(15,2)"), ("l_discount", "DECIMAL(15,2)"),
        ("l_tax", "DECIMAL(15,2)"), ("l_returnflag", "VARCHAR"), ("l_linestatus", "VARCHAR"),
        ("l_shipdate", "DATE"), ("l_commitdate", "DATE"), ("l_receiptdate", "DATE"),
        ("l_shipinstruct", "VARCHAR"), ("l_shipmode", "VARCHAR"), ("l_comment", "VARCHAR"),
    ],
}

# ---------------------------------------------------------------------------
# The 22 queries (TPC-H clause 2.4) with the validation substitution values
# (qgen -d; the table in shared/reference/TPC.md 2.1). Q11's fraction is
# 0.0001/SF and is filled in by queries(). Row limits are the specification's
# (Q2 100, Q3 10, Q10 20, Q18 100, Q21 100).
#
# COLUMNS are the stored column names: the SELECT-list names, and for Q18's
# unnamed aggregate its expression.

COLUMNS = {
    1: ["l_returnflag", "l_linestatus", "sum_qty", "sum_base_price", "sum_disc_price",
        "sum_charge", "avg_qty", "avg_price", "avg_disc", "count_order"],
    2: ["s_acctbal", "s_name", "n_name", "p_partkey", "p_mfgr", "s_address", "s_phone",
        "s_comment"],
    3: ["l_orderkey", "revenue", "o_orderdate", "o_shippriority"],
    4: ["o_orderpriority", "order_count"],
    5: ["n_name", "revenue"],
    6: ["revenue"],
    7: ["supp_nation", "cust_nation", "l_year", "revenue"],
    8: ["o_year", "mkt_share"],
    9: ["nation", "o_year", "sum_profit"],
    10: ["c_custkey", "c_name", "revenue", "c_acctbal", "n_name", "c_address", "c_phone",
         "c_comment"],
    11: ["ps_partkey", "value"],
    12: ["l_shipmode", "high_line_count", "low_line_count"],
    13: ["c_count", "custdist"],
    14: ["promo_revenue"],
    15: ["s_suppkey", "s_name", "s_address", "s_phone", "total_revenue"],
    16: ["p_brand", "p_type", "p_size", "supplier_cnt"],
    17: ["avg_yearly"],
    18: ["c_name", "c_custkey", "o_orderkey", "o_orderdate", "o_totalprice", "sum(l_quantity)"],
    19: ["revenue"],
    20: ["s_name", "s_address"],
    21: ["s_name", "numwait"],
    22: ["cntrycode", "numcust", "totacctbal"],
}


def queries(sf):
    """Return {q: [statement, ...]}; the answer is the last SELECT's result."""
    fraction = decimal.Decimal("0.0001") / decimal.Decimal(str(sf))
    q = {}
    q[1] = """
select l_returnflag, l_linestatus,
       sum(l_quantity) as sum_qty,
       sum(l_extendedprice) as sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
       avg(l_quantity) as avg_qty,
       avg(l_extendedprice) as avg_price,
       avg(l_discount) as avg_disc,
       count(*) as count_order
from lineitem
where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus
order by l_returnflag, l_linestatus"""
    q[2] = """
select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey
  and s_suppkey = ps_suppkey
  and p_size = 15
  and p_type like '%BRASS'
  and s_nationkey = n_nationkey
  and n_regionkey = r_regionkey
  and r_name = 'EUROPE'
  and ps_supplycost = (
      select min(ps_supplycost)
      from partsupp, supplier, nation, region
      where p_partkey = ps_partkey
        and s_suppkey = ps_suppkey
        and s_nationkey = n_nationkey
        and n_regionkey = r_regionkey
        and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey
limit 100"""
    q[3] = """
select l_orderkey,
       sum(l_extendedprice * (1 - l_discount)) as revenue,
       o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING'
  and c_custkey = o_custkey
  and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15'
  and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate
limit 10"""
    q[4] = """
select o_orderpriority, count(*) as order_count
from orders
where o_orderdate >= date '1993-07-01'
  and o_orderdate < date '1993-07-01' + interval '3' month
  and exists (
      select * from lineitem
      where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority
order by o_orderpriority"""
    q[5] = """
select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey
  and l_orderkey = o_orderkey
  and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey
  and s_nationkey = n_nationkey
  and n_regionkey = r_regionkey
  and r_name = 'ASIA'
  and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name
order by revenue desc"""
    q[6] = """
select sum(l_extendedprice * l_discount) as revenue
from lineitem
where l_shipdate >= date '1994-01-01'
  and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01
  and l_quantity < 24"""
    q[7] = """
select supp_nation, cust_nation, l_year, sum(volume) as revenue
from (
    select n1.n_name as supp_nation, n2.n_name as cust_nation,
           extract(year from l_shipdate) as l_year,
           l_extendedprice * (1 - l_discount) as volume
    from supplier, lineitem, orders, customer, nation n1, nation n2
    where s_suppkey = l_suppkey
      and o_orderkey = l_orderkey
      and c_custkey = o_custkey
      and s_nationkey = n1.n_nationkey
      and c_nationkey = n2.n_nationkey
      and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY')
        or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
      and l_shipdate between date '1995-01-01' and date '1996-12-31'
) as shipping
group by supp_nation, cust_nation, l_year
order by supp_nation, cust_nation, l_year"""
    q[8] = """
select o_year,
       sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (
    select extract(year from o_orderdate) as o_year,
           l_extendedprice * (1 - l_discount) as volume,
           n2.n_name as nation
    from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    where p_partkey = l_partkey
      and s_suppkey = l_suppkey
      and l_orderkey = o_orderkey
      and o_custkey = c_custkey
      and c_nationkey = n1.n_nationkey
      and n1.n_regionkey = r_regionkey
      and r_name = 'AMERICA'
      and s_nationkey = n2.n_nationkey
      and o_orderdate between date '1995-01-01' and date '1996-12-31'
      and p_type = 'ECONOMY ANODIZED STEEL'
) as all_nations
group by o_year
order by o_year"""
    q[9] = """
select nation, o_year, sum(amount) as sum_profit
from (
    select n_name as nation,
           extract(year from o_orderdate) as o_year,
           l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
    from part, supplier, lineitem, partsupp, orders, nation
    where s_suppkey = l_suppkey
      and ps_suppkey = l_suppkey
      and ps_partkey = l_partkey
      and p_partkey = l_partkey
      and o_orderkey = l_orderkey
      and s_nationkey = n_nationkey
      and p_name like '%green%'
) as profit
group by nation, o_year
order by nation, o_year desc"""
    q[10] = """
select c_custkey, c_name,
       sum(l_extendedprice * (1 - l_discount)) as revenue,
       c_acctbal, n_name, c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey
  and l_orderkey = o_orderkey
  and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month
  and l_returnflag = 'R'
  and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc
limit 20"""
    q[11] = """
select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey
  and s_nationkey = n_nationkey
  and n_name = 'GERMANY'
group by ps_partkey
having sum(ps_supplycost * ps_availqty) > (
    select sum(ps_supplycost * ps_availqty) * %s
    from partsupp, supplier, nation
    where ps_suppkey = s_suppkey
      and s_nationkey = n_nationkey
      and n_name = 'GERMANY')
order by value desc""" % fraction
    q[12] = """
select l_shipmode,
       sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH'
                then 1 else 0 end) as high_line_count,
       sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH'
                then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey
  and l_shipmode in ('MAIL', 'SHIP')
  and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate
  and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode
order by l_shipmode"""
    q[13] = """
select c_count, count(*) as custdist
from (
    select c_custkey, count(o_orderkey)
    from customer left outer join orders
      on c_custkey = o_custkey and o_comment not like '%special%requests%'
    group by c_custkey
) as c_orders (c_custkey, c_count)
group by c_count
order by custdist desc, c_count desc"""
    q[14] = """
select 100.00 * sum(case when p_type like 'PROMO%'
                         then l_extendedprice * (1 - l_discount) else 0 end)
       / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey
  and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month"""
    q[15] = [
        """
create view revenue0 (supplier_no, total_revenue) as
select l_suppkey, sum(l_extendedprice * (1 - l_discount))
from lineitem
where l_shipdate >= date '1996-01-01'
  and l_shipdate < date '1996-01-01' + interval '3' month
group by l_suppkey""",
        """
select s_suppkey, s_name, s_address, s_phone, total_revenue
from supplier, revenue0
where s_suppkey = supplier_no
  and total_revenue = (select max(total_revenue) from revenue0)
order by s_suppkey""",
        "drop view revenue0",
    ]
    q[16] = """
select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey
  and p_brand <> 'Brand#45'
  and p_type not like 'MEDIUM POLISHED%'
  and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
  and ps_suppkey not in (
      select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size
order by supplier_cnt desc, p_brand, p_type, p_size"""
    q[17] = """
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey
  and p_brand = 'Brand#23'
  and p_container = 'MED BOX'
  and l_quantity < (
      select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)"""
    q[18] = """
select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (
      select l_orderkey from lineitem group by l_orderkey
      having sum(l_quantity) > 300)
  and c_custkey = o_custkey
  and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate
limit 100"""
    q[19] = """
select sum(l_extendedprice * (1 - l_discount)) as revenue
from lineitem, part
where (p_partkey = l_partkey
       and p_brand = 'Brand#12'
       and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
       and l_quantity >= 1 and l_quantity <= 1 + 10
       and p_size between 1 and 5
       and l_shipmode in ('AIR', 'AIR REG')
       and l_shipinstruct = 'DELIVER IN PERSON')
   or (p_partkey = l_partkey
       and p_brand = 'Brand#23'
       and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
       and l_quantity >= 10 and l_quantity <= 10 + 10
       and p_size between 1 and 10
       and l_shipmode in ('AIR', 'AIR REG')
       and l_shipinstruct = 'DELIVER IN PERSON')
   or (p_partkey = l_partkey
       and p_brand = 'Brand#34'
       and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
       and l_quantity >= 20 and l_quantity <= 20 + 10
       and p_size between 1 and 15
       and l_shipmode in ('AIR', 'AIR REG')
       and l_shipinstruct = 'DELIVER IN PERSON')"""
    q[20] = """
select s_name, s_address
from supplier, nation
where s_suppkey in (
      select ps_suppkey from partsupp
      where ps_partkey in (select p_partkey from part where p_name like 'forest%')
        and ps_availqty > (
            select 0.5 * sum(l_quantity) from lineitem
            where l_partkey = ps_partkey
              and l_suppkey = ps_suppkey
              and l_shipdate >= date '1994-01-01'
              and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey
  and n_name = 'CANADA'
order by s_name"""
    q[21] = """
select s_name, count(*) as numwait
from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey
  and o_orderkey = l1.l_orderkey
  and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (
      select * from lineitem l2
      where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (
      select * from lineitem l3
      where l3.l_orderkey = l1.l_orderkey
        and l3.l_suppkey <> l1.l_suppkey
        and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey
  and n_name = 'SAUDI ARABIA'
group by s_name
order by numwait desc, s_name
limit 100"""
    q[22] = """
select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal
from (
    select substring(c_phone from 1 for 2) as cntrycode, c_acctbal
    from customer
    where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')
      and c_acctbal > (
          select avg(c_acctbal) from customer
          where c_acctbal > 0.00
            and substring(c_phone from 1 for 2) in
                ('13', '31', '23', '29', '30', '18', '17'))
      and not exists (select * from orders where o_custkey = c_custkey)
) as custsale
group by cntrycode
order by cntrycode"""
    return {k: (v if isinstance(v, list) else [v]) for k, v in q.items()}


# ---------------------------------------------------------------------------
# The stored form: values as text, numbers that are not integers with
# exactly two decimals (rounded half away from zero, the Appendix C
# presentation), dates as YYYY-MM-DD, strings without trailing blanks.

CENT = decimal.Decimal("0.01")


def text(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        raise ValueError("unexpected boolean %r" % v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        v = decimal.Decimal(repr(v))
    if isinstance(v, decimal.Decimal):
        return str(v.quantize(CENT, rounding=decimal.ROUND_HALF_UP))
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.strftime("%Y-%m-%d")
    if isinstance(v, str):
        return v.rstrip(" ")
    raise ValueError("unexpected value %r of type %s" % (v, type(v).__name__))


def sf_text(sf):
    return str(decimal.Decimal(str(sf)).normalize())


def write_answers(out, header, answers):
    """answers: {q: [[text, ...], ...]} for q in 1..22."""
    lines = ["# " + h for h in header]
    for q in range(1, 23):
        rows = answers[q]
        lines.append("Q%d|%d" % (q, len(rows)))
        lines.append("|".join(COLUMNS[q]))
        for r in rows:
            if len(r) != len(COLUMNS[q]):
                raise ValueError("Q%d: row has %d values, want %d" % (q, len(r), len(COLUMNS[q])))
            for v in r:
                if "|" in v or "\n" in v:
                    raise ValueError("Q%d: value %r cannot be stored" % (q, v))
            lines.append("|".join(r))
    data = "\n".join(lines) + "\n"
    if out == "-":
        sys.stdout.write(data)
    elif out.endswith(".gz"):
        # No name and no time stamp in the header: the same answers make
        # the same bytes.
        with open(out, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as f:
                f.write(data.encode("utf-8"))
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(data)


# ---------------------------------------------------------------------------


def tool(name):
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.access(here, os.X_OK):
        return here
    found = shutil.which(name)
    if not found:
        sys.exit("tpch-answers: %s not found (run scripts/tpch-oracle.sh and use .oracle/bin/python)" % name)
    return found


def generate(sf, directory):
    subprocess.run([tool("tpchgen-cli"), "-s", sf_text(sf), "-o", directory, "-q"], check=True)


def load(con, directory):
    for table, cols in TABLES.items():
        con.execute("create table %s (%s)" % (table, ", ".join("%s %s" % c for c in cols)))
        # Every .tbl line ends with '|': declare one more, empty, column.
        spec = ", ".join("'%s': '%s'" % c for c in cols + [("eol", "VARCHAR")])
        names = ", ".join(c[0] for c in cols)
        path = os.path.join(directory, table + ".tbl").replace("'", "''")
        con.execute(
            "insert into %s select %s from read_csv('%s', delim='|', header=false, "
            "quote='', escape='', columns={%s}, dateformat='%%Y-%%m-%%d')"
            % (table, names, path, spec))


def compute(sf, tbl_dir):
    import duckdb  # the oracle environment's pinned version

    tmp = None
    if tbl_dir is None:
        tmp = tempfile.mkdtemp(prefix="tpch-answers-")
        tbl_dir = tmp
        generate(sf, tbl_dir)
    try:
        con = duckdb.connect()
        load(con, tbl_dir)
        answers = {}
        for q, stmts in sorted(queries(sf).items()):
            rows = None
            for s in stmts:
                cur = con.execute(s)
                if s.lstrip().lower().startswith("select"):
                    rows = cur.fetchall()
            answers[q] = [[text(v) for v in r] for r in rows]
        return answers, duckdb.__version__
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


# Column kinds needed only to trim the official files' padding: strings keep
# leading blanks (a comment may start with one), everything else is trimmed.
STRING_COLUMNS = {
    1: {0, 1}, 2: {1, 2, 4, 5, 6, 7}, 3: {2}, 4: {0}, 5: {0}, 7: {0, 1}, 9: {0},
    10: {1, 4, 5, 6, 7}, 12: {0}, 15: {1, 2, 3}, 16: {0, 1}, 18: {0, 3}, 20: {0, 1},
    21: {0}, 22: {0},
}


def read_official(path, q):
    name = "q%d.out" % q
    if os.path.isfile(os.path.join(path, name)):
        with open(os.path.join(path, name), encoding="utf-8") as f:
            data = f.read()
    else:
        data = subprocess.run(
            ["git", "--git-dir", path, "show", "HEAD:dbgen/answers/" + name],
            check=True, capture_output=True, text=True).stdout
    lines = [l for l in data.split("\n") if l.strip() != ""]
    rows = []
    for line in lines[1:]:  # the first line is a header
        fields = line.split("|")
        if len(fields) != len(COLUMNS[q]):
            raise ValueError("%s: %d fields in %r, want %d" % (name, len(fields), line, len(COLUMNS[q])))
        strs = STRING_COLUMNS.get(q, set())
        rows.append([f.rstrip(" ") if i in strs else f.strip(" ") for i, f in enumerate(fields)])
    return rows


def tool_version(name):
    out = subprocess.run([tool(name), "--version"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, help="scale factor to compute answers for")
    ap.add_argument("--tbl", help="use these .tbl files (tpchgen-cli output) instead of generating them")
    ap.add_argument("--official", help="convert the TPC answer files in DIR (or git dir) instead")
    ap.add_argument("--out", default="-", help="output file, gzip-compressed if it ends in .gz (default: stdout)")
    a = ap.parse_args()
    if a.official:
        answers = {q: read_official(a.official, q) for q in range(1, 23)}
        header = [
            "TPC-H answers, scale factor 1: the TPC's qualification answers",
            "(dbgen/answers/q1.out .. q22.out of the TPC tools) in tunebench's stored form.",
        ]
    elif a.sf:
        answers, ddb = compute(a.sf, a.tbl)
        header = [
            "TPC-H answers, scale factor %s, validation parameters." % sf_text(a.sf),
            "Computed by scripts/tpch-answers.py: %s data, DuckDB %s." % (tool_version("tpchgen-cli"), ddb),
        ]
    else:
        ap.error("give --sf or --official")
    write_answers(a.out, header, answers)


if __name__ == "__main__":
    main()
