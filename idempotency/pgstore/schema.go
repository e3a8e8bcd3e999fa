package pgstore

// component names the store's schema in tradewire_schema.
const component = "intents"

// steps are the schema's versions: steps[i] takes it from version i to
// i+1 (pgconn.Pool.Migrate). An intent is one row of tradewire_intents:
//
//	account, client_order_id  the key
//	rec         the idempotency.Record as JSON (bytea: kept byte for byte)
//	state       the record's state, for the statements
//	owner       the claim holder ("" when nobody holds it)
//	lease       when the claim lapses, on the server's clock
//	signexp     when the latest signature can no longer be accepted
//	            (LastSignedAt + 30 s + skew margin, on the writer's clock);
//	            NULL when nothing was signed
//	created_at  the record's CreatedAt, for List's order
//	settled_at  when it settled, on the server's clock; NULL while open
//	version     incremented by every write
//
// tradewire_intent_meta holds idempotency.Meta's values by (account, name).
var steps = []string{`
CREATE TABLE tradewire_intents (
	account         text        NOT NULL,
	client_order_id text        NOT NULL,
	rec             bytea       NOT NULL,
	state           text        NOT NULL,
	owner           text        NOT NULL DEFAULT '',
	lease           timestamptz,
	signexp         timestamptz,
	created_at      timestamptz NOT NULL,
	settled_at      timestamptz,
	version         bigint      NOT NULL DEFAULT 1,
	PRIMARY KEY (account, client_order_id)
);
CREATE INDEX tradewire_intents_open ON tradewire_intents (account, created_at) WHERE state IN ('pending', 'unknown');
CREATE INDEX tradewire_intents_settled ON tradewire_intents (account, settled_at) WHERE settled_at IS NOT NULL;
CREATE TABLE tradewire_intent_meta (
	account text  NOT NULL,
	name    text  NOT NULL,
	value   bytea NOT NULL,
	PRIMARY KEY (account, name)
);`,
}

// The statements. Times of leases and retention are the server's
// (clock_timestamp()); durations are passed in milliseconds.

// insertSQL writes a new intent held by its caller, or nothing when the
// key exists. $1 account, $2 client_order_id, $3 rec, $4 state, $5 owner,
// $6 lease ms, $7 signexp (NULL: never signed), $8 created_at.
const insertSQL = `
INSERT INTO tradewire_intents (account, client_order_id, rec, state, owner, lease, signexp, created_at, settled_at)
VALUES ($1, $2, $3, $4::text, $5, clock_timestamp() + $6 * interval '1 millisecond', $7, $8,
	CASE WHEN $4::text IN ('pending', 'unknown') THEN NULL ELSE clock_timestamp() END)
ON CONFLICT (account, client_order_id) DO NOTHING`

// free is the condition under which an existing, unresolved intent may
// be claimed by the owner in parameter owner, with now the caller's
// clock: the caller holds it already, nobody does (released), or its
// claim lapsed and, if it is open, every signature it was sent with has
// expired on both the server's clock and the caller's. (A lapsed claim on
// an open intent may belong to a stalled, not a dead, holder.)
func free(owner, now string) string {
	return `state NOT IN ('acknowledged', 'rejected')
	AND (owner = ` + owner + ` OR owner = '' OR (lease <= clock_timestamp()
		AND (state NOT IN ('pending', 'unknown') OR signexp IS NULL OR signexp <= least(clock_timestamp(), ` + now + `::timestamptz))))`
}

// claimSQL passes an existing intent's claim to owner $3 (or renews it)
// when free allows; $4 lease ms, $5 the caller's now. Returns the record
// when it did.
var claimSQL = `
UPDATE tradewire_intents SET owner = $3, lease = clock_timestamp() + $4 * interval '1 millisecond', version = version + 1
WHERE account = $1 AND client_order_id = $2 AND ` + free("$3", "$5") + `
RETURNING rec`

// peekSQL reads an intent that claimSQL did not claim: the record, its
// claim, and whether it has become free for owner $3 since ($4 the
// caller's now).
var peekSQL = `
SELECT rec, state, owner, lease, signexp, (` + free("$3", "$4") + `) AS free
FROM tradewire_intents WHERE account = $1 AND client_order_id = $2`

// updateSQL replaces an intent held by $5. A final state releases the
// claim and marks it settled; an open one renews the lease. Returns
// whether it wrote, and the owner it found (NULL: no such intent).
// $3 rec, $4 state, $6 lease ms, $7 signexp, $8 created_at.
const updateSQL = `
WITH u AS (
	UPDATE tradewire_intents SET rec = $3, state = $4::text,
		owner = CASE WHEN $4::text IN ('pending', 'unknown') THEN owner ELSE '' END,
		lease = CASE WHEN $4::text IN ('pending', 'unknown') THEN clock_timestamp() + $6 * interval '1 millisecond' END,
		signexp = greatest(signexp, $7::timestamptz),
		created_at = $8,
		settled_at = CASE WHEN $4::text IN ('pending', 'unknown') THEN NULL ELSE clock_timestamp() END,
		version = version + 1
	WHERE account = $1 AND client_order_id = $2 AND owner = $5
	RETURNING version)
SELECT (SELECT count(*) FROM u), (SELECT owner FROM tradewire_intents WHERE account = $1 AND client_order_id = $2)`

// purgeSQL deletes up to 16 intents of account $1 settled more than $2 ms
// ago that no holder has claimed, leaving those named in $3 (written by
// the same commit).
const purgeSQL = `
DELETE FROM tradewire_intents WHERE (account, client_order_id) IN (
	SELECT account, client_order_id FROM tradewire_intents
	WHERE account = $1 AND settled_at <= clock_timestamp() - $2 * interval '1 millisecond'
		AND state NOT IN ('pending', 'unknown') AND (owner = '' OR lease <= clock_timestamp())
		AND client_order_id <> ALL($3::text[])
	ORDER BY settled_at LIMIT 16 FOR UPDATE SKIP LOCKED)`

// releaseSQL drops owner $3's claim, leaving the record.
const releaseSQL = `
UPDATE tradewire_intents SET owner = '', lease = NULL, version = version + 1
WHERE account = $1 AND client_order_id = $2 AND owner = $3`
