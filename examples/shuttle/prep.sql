-- examples/shuttle/prep.sql — StatLog shuttle: 9 sensor values -> 7 classes, 80% one of them (imbalanced multiclass).
-- The input folder holds shuttle.csv.gz from ../shared/data/tabular (table
-- shuttle).  is_test = 1 marks the published test split: those rows only
-- become the test table (never trained on, never used to pick a model);
-- every 5th training row is the validation split.
CREATE TABLE rows AS
SELECT CAST(_line AS INTEGER) - 1 AS id, CAST("V1" AS REAL) AS V1, CAST("V2" AS REAL) AS V2, CAST("V3" AS REAL) AS V3, CAST("V4" AS REAL) AS V4, CAST("V5" AS REAL) AS V5, CAST("V6" AS REAL) AS V6, CAST("V7" AS REAL) AS V7, CAST("V8" AS REAL) AS V8, CAST("V9" AS REAL) AS V9,
       "Class" AS label, CAST(is_test AS INTEGER) AS is_test,
       CASE WHEN CAST(_line AS INTEGER) % 5 = 0 THEN 1 ELSE 0 END AS is_val
FROM shuttle;
SELECT rt_check((SELECT count(*) FROM rows WHERE is_test = 0) > 0, 'shuttle: no training rows');
CREATE TABLE train AS SELECT * FROM rows WHERE is_test = 0;
CREATE TABLE test AS SELECT * FROM rows WHERE is_test = 1;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES
  ('train_table', 'train'), ('test_table', 'test'), ('id', 'id'),
  ('label', 'label'), ('validation', 'is_val'),
  ('continuous', 'V1,V2,V3,V4,V5,V6,V7,V8,V9');
