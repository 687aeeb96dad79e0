-- examples/wa_churn/prep.sql — telecom churn (../shared/data/tabular/wa_churn.csv.gz):
-- 7,043 customers, 16 flags and categories categorical, tenure and the charges
-- continuous (total_charges missing 11 times: the mean and an __na flag); the
-- label churn (Yes, the minority class, positive); is_test rows held out.
-- Written by `ringtrain prep --from` as it is (the command below), kept as the
-- example's script.
-- prep.sql: what `ringtrain prep --from` decided, as a feature script.
-- Made by: ringtrain prep --from wa_churn.csv.gz --test-column is_test --label churn --out ds --partitions 2
-- rt_missing(x) is true for NULL, '' and the marks of a missing value
-- (NA, N/A, NaN, null, None, #N/A, ?, ...: docs/prep.md).
-- Run again (after an edit, say) with
--   ringtrain prep --input DIR --sql prep.sql --out DATASET
-- where DIR holds the input file (table wa_churn).
--
-- What prep decided, column by column (docs/prep.md says by which rules):
--   column            kind      distinct  missing  role        why
--   churn             boolean          2        0  label       --label
--   female            integer          2        0  categorical integers, 2 values
--   senior_citizen    integer          2        0  categorical integers, 2 values
--   partner           integer          2        0  categorical integers, 2 values
--   dependents        integer          2        0  categorical integers, 2 values
--   tenure            integer         73        0  continuous  numbers
--   phone_service     integer          2        0  categorical integers, 2 values
--   multiple_lines    text             3        0  categorical text, 3 values
--   internet_service  text             3        0  categorical text, 3 values
--   online_security   text             3        0  categorical text, 3 values
--   online_backup     text             3        0  categorical text, 3 values
--   device_protection text             3        0  categorical text, 3 values
--   tech_support      text             3        0  categorical text, 3 values
--   streaming_tv      text             3        0  categorical text, 3 values
--   streaming_movies  text             3        0  categorical text, 3 values
--   contract          text             3        0  categorical text, 3 values
--   paperless_billing integer          2        0  categorical integers, 2 values
--   payment_method    text             4        0  categorical text, 4 values
--   monthly_charges   number       >1000        0  continuous  numbers
--   total_charges     number       >1000       11  continuous  numbers; missing: mean, __na
--   is_test           integer          2        0  test flag   --test-column
CREATE TABLE "rt_rows" AS
SELECT ROW_NUMBER() OVER (ORDER BY _line) AS rt_id, _line,
  s1."churn" AS "churn",
  rt_flag(s1."is_test", 'is_test', _line) AS "rt_test",
  CASE WHEN rt_missing(s1."female") THEN NULL ELSE CAST(s1."female" AS INTEGER) END AS "female",
  CASE WHEN rt_missing(s1."senior_citizen") THEN NULL ELSE CAST(s1."senior_citizen" AS INTEGER) END AS "senior_citizen",
  CASE WHEN rt_missing(s1."partner") THEN NULL ELSE CAST(s1."partner" AS INTEGER) END AS "partner",
  CASE WHEN rt_missing(s1."dependents") THEN NULL ELSE CAST(s1."dependents" AS INTEGER) END AS "dependents",
  s1."tenure" AS "tenure",
  CASE WHEN rt_missing(s1."phone_service") THEN NULL ELSE CAST(s1."phone_service" AS INTEGER) END AS "phone_service",
  s1."multiple_lines" AS "multiple_lines",
  s1."internet_service" AS "internet_service",
  s1."online_security" AS "online_security",
  s1."online_backup" AS "online_backup",
  s1."device_protection" AS "device_protection",
  s1."tech_support" AS "tech_support",
  s1."streaming_tv" AS "streaming_tv",
  s1."streaming_movies" AS "streaming_movies",
  s1."contract" AS "contract",
  CASE WHEN rt_missing(s1."paperless_billing") THEN NULL ELSE CAST(s1."paperless_billing" AS INTEGER) END AS "paperless_billing",
  s1."payment_method" AS "payment_method",
  s1."monthly_charges" AS "monthly_charges",
  CASE WHEN rt_missing(s1."total_charges") THEN 2254.6582651973031 ELSE s1."total_charges" END AS "total_charges",
  CASE WHEN rt_missing(s1."total_charges") THEN 1 ELSE 0 END AS "total_charges__na"
FROM "wa_churn" AS s1
ORDER BY _line;
CREATE TABLE rt_train AS
SELECT *,
  CASE WHEN ROW_NUMBER() OVER (PARTITION BY "churn" ORDER BY rt_hash(0, _line), _line) <= min(CAST(round(0.20000000000000001 * COUNT(*) OVER (PARTITION BY "churn" )) AS INTEGER), COUNT(*) OVER (PARTITION BY "churn" ) - 1) THEN 1 ELSE 0 END AS rt_validation
FROM rt_rows WHERE rt_test = 0
ORDER BY _line;
CREATE TABLE rt_test AS SELECT * FROM rt_rows WHERE rt_test = 1 ORDER BY _line;
SELECT rt_check((SELECT count(*) FROM rt_train) > 0, 'every row is a test row (is_test)');
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES
  ('train_table', 'rt_train'),
  ('test_table', 'rt_test'),
  ('label', 'churn'),
  ('id', 'rt_id'),
  ('validation', 'rt_validation'),
  ('categorical', 'female,senior_citizen,partner,dependents,phone_service,multiple_lines,internet_service,online_security,online_backup,device_protection,tech_support,streaming_tv,streaming_movies,contract,paperless_billing,payment_method,total_charges__na'),
  ('continuous', 'tenure,monthly_charges,total_charges');
