-- examples/breastcancer/prep.sql — Wisconsin breast cancer: 9 ordinal scores (text, 16 missing: NA) -> benign/malignant (binary).
-- The input folder holds breastcancer.csv.gz from ../shared/data/tabular (table
-- breastcancer).  is_test = 1 marks the published test split: those rows only
-- become the test table (never trained on, never used to pick a model);
-- every 5th training row is the validation split.  Each score is both a
-- category (its own embedding; NA, missing, one of them) and a number
-- (the _v columns, NA as 0), so the model sees the scores' order too.
CREATE TABLE rows AS
SELECT CAST(_line AS INTEGER) - 1 AS id, "Cl.thickness" AS Cl_thickness, "Cell.size" AS Cell_size, "Cell.shape" AS Cell_shape, "Marg.adhesion" AS Marg_adhesion, "Epith.c.size" AS Epith_c_size, "Bare.nuclei" AS Bare_nuclei, "Bl.cromatin" AS Bl_cromatin, "Normal.nucleoli" AS Normal_nucleoli, "Mitoses" AS Mitoses,
       CAST("Cl.thickness" AS REAL) AS Cl_thickness_v, CAST("Cell.size" AS REAL) AS Cell_size_v,
       CAST("Cell.shape" AS REAL) AS Cell_shape_v,
       CAST("Marg.adhesion" AS REAL) AS Marg_adhesion_v,
       CAST("Epith.c.size" AS REAL) AS Epith_c_size_v,
       CASE WHEN "Bare.nuclei" = 'NA' THEN 0 ELSE CAST("Bare.nuclei" AS REAL) END AS Bare_nuclei_v,
       CAST("Bl.cromatin" AS REAL) AS Bl_cromatin_v,
       CAST("Normal.nucleoli" AS REAL) AS Normal_nucleoli_v, CAST("Mitoses" AS REAL) AS Mitoses_v,
       "Class" AS label, CAST(is_test AS INTEGER) AS is_test,
       CASE WHEN CAST(_line AS INTEGER) % 5 = 0 THEN 1 ELSE 0 END AS is_val
FROM breastcancer;
SELECT rt_check((SELECT count(*) FROM rows WHERE is_test = 0) > 0, 'breastcancer: no training rows');
CREATE TABLE train AS SELECT * FROM rows WHERE is_test = 0;
CREATE TABLE test AS SELECT * FROM rows WHERE is_test = 1;
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES
  ('train_table', 'train'), ('test_table', 'test'), ('id', 'id'),
  ('label', 'label'), ('validation', 'is_val'),
  ('categorical', 'Cl_thickness,Cell_size,Cell_shape,Marg_adhesion,Epith_c_size,Bare_nuclei,Bl_cromatin,Normal_nucleoli,Mitoses'),
  ('continuous', 'Cl_thickness_v,Cell_size_v,Cell_shape_v,Marg_adhesion_v,Epith_c_size_v,Bare_nuclei_v,Bl_cromatin_v,Normal_nucleoli_v,Mitoses_v');
