package qgen

import (
	"strconv"
	"strings"
)

// querySQL substitutes params into query n's text. A marker {k} in a text
// stands for parameter k (1-based, the numbering of the specification's
// query definitions); the values are inserted as they are, inside the
// quotes the text provides, with any single quote doubled.
func querySQL(n int, params []string) string {
	pairs := make([]string, 0, 2*len(params))
	for i, p := range params {
		pairs = append(pairs, "{"+strconv.Itoa(i+1)+"}", strings.ReplaceAll(p, "'", "''"))
	}
	return strings.NewReplacer(pairs...).Replace(queryTexts[n-1])
}

// queryTexts are the 22 queries of the TPC-H specification (clause 2.4,
// "Functional Query Definition" of each query), written for PostgreSQL:
// dates as date literals, intervals as PostgreSQL interval literals,
// Q15's view as a common table expression so that the query is one
// statement, and the row limits of the specification (Q2 100, Q3 10,
// Q10 20, Q18 100, Q21 100) as LIMIT clauses. The select lists, their
// column names and the ORDER BY clauses are the specification's.
var queryTexts = [numQueries]string{
	// Q1 Pricing Summary Report. {1} DELTA (days).
	`select
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty,
    avg(l_extendedprice) as avg_price,
    avg(l_discount) as avg_disc,
    count(*) as count_order
from
    lineitem
where
    l_shipdate <= date '1998-12-01' - interval '{1} day'
group by
    l_returnflag,
    l_linestatus
order by
    l_returnflag,
    l_linestatus`,

	// Q2 Minimum Cost Supplier. {1} SIZE, {2} TYPE, {3} REGION.
	`select
    s_acctbal,
    s_name,
    n_name,
    p_partkey,
    p_mfgr,
    s_address,
    s_phone,
    s_comment
from
    part,
    supplier,
    partsupp,
    nation,
    region
where
    p_partkey = ps_partkey
    and s_suppkey = ps_suppkey
    and p_size = {1}
    and p_type like '%{2}'
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = '{3}'
    and ps_supplycost = (
        select
            min(ps_supplycost)
        from
            partsupp,
            supplier,
            nation,
            region
        where
            p_partkey = ps_partkey
            and s_suppkey = ps_suppkey
            and s_nationkey = n_nationkey
            and n_regionkey = r_regionkey
            and r_name = '{3}'
    )
order by
    s_acctbal desc,
    n_name,
    s_name,
    p_partkey
limit 100`,

	// Q3 Shipping Priority. {1} SEGMENT, {2} DATE.
	`select
    l_orderkey,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    o_orderdate,
    o_shippriority
from
    customer,
    orders,
    lineitem
where
    c_mktsegment = '{1}'
    and c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate < date '{2}'
    and l_shipdate > date '{2}'
group by
    l_orderkey,
    o_orderdate,
    o_shippriority
order by
    revenue desc,
    o_orderdate
limit 10`,

	// Q4 Order Priority Checking. {1} DATE.
	`select
    o_orderpriority,
    count(*) as order_count
from
    orders
where
    o_orderdate >= date '{1}'
    and o_orderdate < date '{1}' + interval '3 month'
    and exists (
        select
            *
        from
            lineitem
        where
            l_orderkey = o_orderkey
            and l_commitdate < l_receiptdate
    )
group by
    o_orderpriority
order by
    o_orderpriority`,

	// Q5 Local Supplier Volume. {1} REGION, {2} DATE.
	`select
    n_name,
    sum(l_extendedprice * (1 - l_discount)) as revenue
from
    customer,
    orders,
    lineitem,
    supplier,
    nation,
    region
where
    c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and l_suppkey = s_suppkey
    and c_nationkey = s_nationkey
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = '{1}'
    and o_orderdate >= date '{2}'
    and o_orderdate < date '{2}' + interval '1 year'
group by
    n_name
order by
    revenue desc`,

	// Q6 Forecasting Revenue Change. {1} DATE, {2} DISCOUNT, {3} QUANTITY.
	`select
    sum(l_extendedprice * l_discount) as revenue
from
    lineitem
where
    l_shipdate >= date '{1}'
    and l_shipdate < date '{1}' + interval '1 year'
    and l_discount between {2} - 0.01 and {2} + 0.01
    and l_quantity < {3}`,

	// Q7 Volume Shipping. {1} NATION1, {2} NATION2.
	`select
    supp_nation,
    cust_nation,
    l_year,
    sum(volume) as revenue
from
    (
        select
            n1.n_name as supp_nation,
            n2.n_name as cust_nation,
            extract(year from l_shipdate) as l_year,
            l_extendedprice * (1 - l_discount) as volume
        from
            supplier,
            lineitem,
            orders,
            customer,
            nation n1,
            nation n2
        where
            s_suppkey = l_suppkey
            and o_orderkey = l_orderkey
            and c_custkey = o_custkey
            and s_nationkey = n1.n_nationkey
            and c_nationkey = n2.n_nationkey
            and (
                (n1.n_name = '{1}' and n2.n_name = '{2}')
                or (n1.n_name = '{2}' and n2.n_name = '{1}')
            )
            and l_shipdate between date '1995-01-01' and date '1996-12-31'
    ) as shipping
group by
    supp_nation,
    cust_nation,
    l_year
order by
    supp_nation,
    cust_nation,
    l_year`,

	// Q8 National Market Share. {1} NATION, {2} REGION, {3} TYPE.
	`select
    o_year,
    sum(case
        when nation = '{1}' then volume
        else 0
    end) / sum(volume) as mkt_share
from
    (
        select
            extract(year from o_orderdate) as o_year,
            l_extendedprice * (1 - l_discount) as volume,
            n2.n_name as nation
        from
            part,
            supplier,
            lineitem,
            orders,
            customer,
            nation n1,
            nation n2,
            region
        where
            p_partkey = l_partkey
            and s_suppkey = l_suppkey
            and l_orderkey = o_orderkey
            and o_custkey = c_custkey
            and c_nationkey = n1.n_nationkey
            and n1.n_regionkey = r_regionkey
            and r_name = '{2}'
            and s_nationkey = n2.n_nationkey
            and o_orderdate between date '1995-01-01' and date '1996-12-31'
            and p_type = '{3}'
    ) as all_nations
group by
    o_year
order by
    o_year`,

	// Q9 Product Type Profit Measure. {1} COLOR.
	`select
    nation,
    o_year,
    sum(amount) as sum_profit
from
    (
        select
            n_name as nation,
            extract(year from o_orderdate) as o_year,
            l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
        from
            part,
            supplier,
            lineitem,
            partsupp,
            orders,
            nation
        where
            s_suppkey = l_suppkey
            and ps_suppkey = l_suppkey
            and ps_partkey = l_partkey
            and p_partkey = l_partkey
            and o_orderkey = l_orderkey
            and s_nationkey = n_nationkey
            and p_name like '%{1}%'
    ) as profit
group by
    nation,
    o_year
order by
    nation,
    o_year desc`,

	// Q10 Returned Item Reporting. {1} DATE.
	`select
    c_custkey,
    c_name,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    c_acctbal,
    n_name,
    c_address,
    c_phone,
    c_comment
from
    customer,
    orders,
    lineitem,
    nation
where
    c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate >= date '{1}'
    and o_orderdate < date '{1}' + interval '3 month'
    and l_returnflag = 'R'
    and c_nationkey = n_nationkey
group by
    c_custkey,
    c_name,
    c_acctbal,
    c_phone,
    n_name,
    c_address,
    c_comment
order by
    revenue desc
limit 20`,

	// Q11 Important Stock Identification. {1} NATION, {2} FRACTION.
	`select
    ps_partkey,
    sum(ps_supplycost * ps_availqty) as value
from
    partsupp,
    supplier,
    nation
where
    ps_suppkey = s_suppkey
    and s_nationkey = n_nationkey
    and n_name = '{1}'
group by
    ps_partkey
having
    sum(ps_supplycost * ps_availqty) > (
        select
            sum(ps_supplycost * ps_availqty) * {2}
        from
            partsupp,
            supplier,
            nation
        where
            ps_suppkey = s_suppkey
            and s_nationkey = n_nationkey
            and n_name = '{1}'
    )
order by
    value desc`,

	// Q12 Shipping Modes and Order Priority. {1} SHIPMODE1, {2} SHIPMODE2,
	// {3} DATE.
	`select
    l_shipmode,
    sum(case
        when o_orderpriority = '1-URGENT'
            or o_orderpriority = '2-HIGH'
            then 1
        else 0
    end) as high_line_count,
    sum(case
        when o_orderpriority <> '1-URGENT'
            and o_orderpriority <> '2-HIGH'
            then 1
        else 0
    end) as low_line_count
from
    orders,
    lineitem
where
    o_orderkey = l_orderkey
    and l_shipmode in ('{1}', '{2}')
    and l_commitdate < l_receiptdate
    and l_shipdate < l_commitdate
    and l_receiptdate >= date '{3}'
    and l_receiptdate < date '{3}' + interval '1 year'
group by
    l_shipmode
order by
    l_shipmode`,

	// Q13 Customer Distribution. {1} WORD1, {2} WORD2.
	`select
    c_count,
    count(*) as custdist
from
    (
        select
            c_custkey,
            count(o_orderkey)
        from
            customer left outer join orders on
                c_custkey = o_custkey
                and o_comment not like '%{1}%{2}%'
        group by
            c_custkey
    ) as c_orders (c_custkey, c_count)
group by
    c_count
order by
    custdist desc,
    c_count desc`,

	// Q14 Promotion Effect. {1} DATE.
	`select
    100.00 * sum(case
        when p_type like 'PROMO%'
            then l_extendedprice * (1 - l_discount)
        else 0
    end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from
    lineitem,
    part
where
    l_partkey = p_partkey
    and l_shipdate >= date '{1}'
    and l_shipdate < date '{1}' + interval '1 month'`,

	// Q15 Top Supplier. {1} DATE. The specification's view, as a common
	// table expression (referenced twice, so PostgreSQL computes it once).
	`with revenue (supplier_no, total_revenue) as (
    select
        l_suppkey,
        sum(l_extendedprice * (1 - l_discount))
    from
        lineitem
    where
        l_shipdate >= date '{1}'
        and l_shipdate < date '{1}' + interval '3 month'
    group by
        l_suppkey
)
select
    s_suppkey,
    s_name,
    s_address,
    s_phone,
    total_revenue
from
    supplier,
    revenue
where
    s_suppkey = supplier_no
    and total_revenue = (
        select
            max(total_revenue)
        from
            revenue
    )
order by
    s_suppkey`,

	// Q16 Parts/Supplier Relationship. {1} BRAND, {2} TYPE, {3}..{10} SIZE1..8.
	`select
    p_brand,
    p_type,
    p_size,
    count(distinct ps_suppkey) as supplier_cnt
from
    partsupp,
    part
where
    p_partkey = ps_partkey
    and p_brand <> '{1}'
    and p_type not like '{2}%'
    and p_size in ({3}, {4}, {5}, {6}, {7}, {8}, {9}, {10})
    and ps_suppkey not in (
        select
            s_suppkey
        from
            supplier
        where
            s_comment like '%Customer%Complaints%'
    )
group by
    p_brand,
    p_type,
    p_size
order by
    supplier_cnt desc,
    p_brand,
    p_type,
    p_size`,

	// Q17 Small-Quantity-Order Revenue. {1} BRAND, {2} CONTAINER.
	`select
    sum(l_extendedprice) / 7.0 as avg_yearly
from
    lineitem,
    part
where
    p_partkey = l_partkey
    and p_brand = '{1}'
    and p_container = '{2}'
    and l_quantity < (
        select
            0.2 * avg(l_quantity)
        from
            lineitem
        where
            l_partkey = p_partkey
    )`,

	// Q18 Large Volume Customer. {1} QUANTITY. The specification leaves
	// the last column unnamed.
	`select
    c_name,
    c_custkey,
    o_orderkey,
    o_orderdate,
    o_totalprice,
    sum(l_quantity)
from
    customer,
    orders,
    lineitem
where
    o_orderkey in (
        select
            l_orderkey
        from
            lineitem
        group by
            l_orderkey
        having
            sum(l_quantity) > {1}
    )
    and c_custkey = o_custkey
    and o_orderkey = l_orderkey
group by
    c_name,
    c_custkey,
    o_orderkey,
    o_orderdate,
    o_totalprice
order by
    o_totalprice desc,
    o_orderdate
limit 100`,

	// Q19 Discounted Revenue. {1}..{3} BRAND1..3, {4}..{6} QUANTITY1..3.
	// 'AIR REG' is the specification's literal (no L_SHIPMODE has that
	// value; the qualification answer is computed with it).
	`select
    sum(l_extendedprice * (1 - l_discount)) as revenue
from
    lineitem,
    part
where
    (
        p_partkey = l_partkey
        and p_brand = '{1}'
        and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        and l_quantity >= {4} and l_quantity <= {4} + 10
        and p_size between 1 and 5
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
    or
    (
        p_partkey = l_partkey
        and p_brand = '{2}'
        and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        and l_quantity >= {5} and l_quantity <= {5} + 10
        and p_size between 1 and 10
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
    or
    (
        p_partkey = l_partkey
        and p_brand = '{3}'
        and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        and l_quantity >= {6} and l_quantity <= {6} + 10
        and p_size between 1 and 15
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )`,

	// Q20 Potential Part Promotion. {1} COLOR, {2} DATE, {3} NATION.
	`select
    s_name,
    s_address
from
    supplier,
    nation
where
    s_suppkey in (
        select
            ps_suppkey
        from
            partsupp
        where
            ps_partkey in (
                select
                    p_partkey
                from
                    part
                where
                    p_name like '{1}%'
            )
            and ps_availqty > (
                select
                    0.5 * sum(l_quantity)
                from
                    lineitem
                where
                    l_partkey = ps_partkey
                    and l_suppkey = ps_suppkey
                    and l_shipdate >= date '{2}'
                    and l_shipdate < date '{2}' + interval '1 year'
            )
    )
    and s_nationkey = n_nationkey
    and n_name = '{3}'
order by
    s_name`,

	// Q21 Suppliers Who Kept Orders Waiting. {1} NATION.
	`select
    s_name,
    count(*) as numwait
from
    supplier,
    lineitem l1,
    orders,
    nation
where
    s_suppkey = l1.l_suppkey
    and o_orderkey = l1.l_orderkey
    and o_orderstatus = 'F'
    and l1.l_receiptdate > l1.l_commitdate
    and exists (
        select
            *
        from
            lineitem l2
        where
            l2.l_orderkey = l1.l_orderkey
            and l2.l_suppkey <> l1.l_suppkey
    )
    and not exists (
        select
            *
        from
            lineitem l3
        where
            l3.l_orderkey = l1.l_orderkey
            and l3.l_suppkey <> l1.l_suppkey
            and l3.l_receiptdate > l3.l_commitdate
    )
    and s_nationkey = n_nationkey
    and n_name = '{1}'
group by
    s_name
order by
    numwait desc,
    s_name
limit 100`,

	// Q22 Global Sales Opportunity. {1}..{7} I1..I7 (country codes).
	`select
    cntrycode,
    count(*) as numcust,
    sum(c_acctbal) as totacctbal
from
    (
        select
            substring(c_phone from 1 for 2) as cntrycode,
            c_acctbal
        from
            customer
        where
            substring(c_phone from 1 for 2) in
                ('{1}', '{2}', '{3}', '{4}', '{5}', '{6}', '{7}')
            and c_acctbal > (
                select
                    avg(c_acctbal)
                from
                    customer
                where
                    c_acctbal > 0.00
                    and substring(c_phone from 1 for 2) in
                        ('{1}', '{2}', '{3}', '{4}', '{5}', '{6}', '{7}')
            )
            and not exists (
                select
                    *
                from
                    orders
                where
                    o_custkey = c_custkey
            )
    ) as custsale
group by
    cntrycode
order by
    cntrycode`,
}
