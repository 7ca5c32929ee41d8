// `mssql` ships no types; the tests use it through the store's own structural types (src/driver.ts).
declare module "mssql";
