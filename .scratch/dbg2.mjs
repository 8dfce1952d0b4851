import postgres from "postgres";
const sql = postgres("postgres://127.0.0.1:5432/postgres", { max: 1, onnotice: () => {} });
await sql`create temp table c (n bigint, t timestamptz, id text)`;
await sql`insert into c values (1, now(), 'c1')`;
const [row] = await sql`select t::text as at from c`;
console.log(row);
console.log(await sql`select (n, t, id) > (${1}::bigint, ${row.at}::timestamptz, ${"c1"}) as gt, t = ${row.at}::timestamptz as eq, ${row.at}::timestamptz::text as back from c`);
await sql.end();
