-- A table for the runtime's own tests: proves migrations ran in the definition's schema.
create table probe (id int primary key);
