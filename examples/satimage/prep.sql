-- examples/satimage/prep.sql — StatLog satimage: 36 pixel values -> 6 land-cover classes (multiclass).
-- The input folder holds satimage.csv.gz from ../shared/data/tabular (table
-- satimage).  is_test = 1 marks the published test split: those rows only
-- become the test table (never trained on, never used to pick a model);
-- every 5th training row is the validation split.
CREATE TABLE rows AS
SELECT CAST(_line AS INTEGER) - 1 AS id, CAST("x.1" AS REAL) AS x_1, CAST("x.2" AS REAL) AS x_2, CAST("x.3" AS REAL) AS x_3, CAST("x.4" AS REAL) AS x_4, CAST("x.5" AS REAL) AS x_5, CAST("x.6" AS REAL) AS x_6, CAST("x.7" AS REAL) AS x_7, CAST("x.8" AS REAL) AS x_8, CAST("x.9" AS REAL) AS x_9, CAST("x.10" AS REAL) AS x_10, CAST("x.11" AS REAL) AS x_11, CAST("x.12" AS REAL) AS x_12, CAST("x.13" AS REAL) AS x_13, CAST("x.14" AS REAL) AS x_14, CAST("x.15" AS REAL) AS x_15, CAST("x.16" AS REAL) AS x_16, CAST("x.17" AS REAL) AS x_17, CAST("x.18" AS REAL) AS x_18, CAST("x.19" AS REAL) AS x_19, CAST("x.20" AS REAL) AS x_20, CAST("x.21" AS REAL) AS x_21, CAST("x.22" AS REAL) AS x_22, CAST("x.23" AS REAL) AS x_23, CAST("x.24" AS REAL) AS x_24, CAST("x.25" AS REAL) AS x_25, CAST("x.26" AS REAL) AS x_26, CAST("x.27" AS REAL) AS x_27, CAST("x.28" AS REAL) AS x_28, CAST("x.29" AS REAL) AS x_29, CAST("x.30" AS REAL) AS x_30, CAST("x.31" AS REAL) AS x_31, CAST("x.32" AS REAL) AS x_32, CAST("x.33" AS REAL) AS x_33, CAST("x.34" AS REAL) AS x_34, CAST("x.35" AS REAL) AS x_35, CAST("x.36" AS REAL) AS x_36,
       "classes" AS label, CAST(is_test AS INTEGER) AS is_test,
       CASE WHEN CAST(_line AS INTEGER) % 5 = 0 THEN 1 ELSE 0 END AS is_val
FROM satimage;
SELECT rt_check((SELECT count(*) FROM rows WHERE is_test = 0) > 0, 'satimage: no training rows');
CREATE TABLE train AS SELECT * FROM rows WHERE is_test = 0;
CREATE TABLE test AS SELECT * FROM rows WHERE is_test = 1;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES
  ('train_table', 'train'), ('test_table', 'test'), ('id', 'id'),
  ('label', 'label'), ('validation', 'is_val'),
  ('continuous', 'x_1,x_2,x_3,x_4,x_5,x_6,x_7,x_8,x_9,x_10,x_11,x_12,x_13,x_14,x_15,x_16,x_17,x_18,x_19,x_20,x_21,x_22,x_23,x_24,x_25,x_26,x_27,x_28,x_29,x_30,x_31,x_32,x_33,x_34,x_35,x_36');
