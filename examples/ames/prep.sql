-- examples/ames/prep.sql — Ames house prices (../shared/data/tabular/ames.csv.gz):
-- 2,930 houses, 40 text columns categorical, the rest continuous; the label
-- log(Sale_Price), standardised by the trainer; is_test rows held out. Written
-- by `ringtrain prep --from` as it is (the command below), kept as the example's script.
-- prep.sql: what `ringtrain prep --from` decided, as a feature script.
-- Made by: ringtrain prep --from ames.csv.gz --test-column is_test --label Sale_Price --label-transform log,standardize --out DATASET --partitions 2
-- rt_missing(x) is true for NULL, '' and the marks of a missing value
-- (NA, N/A, NaN, null, None, #N/A, ?, ...: docs/prep.md).
-- Run again (after an edit, say) with
--   ringtrain prep --input DIR --sql prep.sql --out DATASET
-- where DIR holds the input file (table ames).
--
-- What prep decided, column by column (docs/prep.md says by which rules):
--   column             kind      distinct  missing  role        why
--   MS_SubClass        text            16        0  categorical text, 16 values
--   MS_Zoning          text             7        0  categorical text, 7 values
--   Lot_Frontage       integer        129        0  continuous  numbers
--   Lot_Area           integer      >1000        0  continuous  numbers
--   Street             text             2        0  categorical text, 2 values
--   Alley              text             3        0  categorical text, 3 values
--   Lot_Shape          text             4        0  categorical text, 4 values
--   Land_Contour       text             4        0  categorical text, 4 values
--   Utilities          text             3        0  categorical text, 3 values
--   Lot_Config         text             5        0  categorical text, 5 values
--   Land_Slope         text             3        0  categorical text, 3 values
--   Neighborhood       text            28        0  categorical text, 28 values
--   Condition_1        text             9        0  categorical text, 9 values
--   Condition_2        text             8        0  categorical text, 8 values
--   Bldg_Type          text             5        0  categorical text, 5 values
--   House_Style        text             8        0  categorical text, 8 values
--   Overall_Cond       text             9        0  categorical text, 9 values
--   Year_Built         integer        118        0  continuous  numbers
--   Year_Remod_Add     integer         61        0  continuous  numbers
--   Roof_Style         text             6        0  categorical text, 6 values
--   Roof_Matl          text             8        0  categorical text, 8 values
--   Exterior_1st       text            16        0  categorical text, 16 values
--   Exterior_2nd       text            17        0  categorical text, 17 values
--   Mas_Vnr_Type       text             4     1775  categorical text, 4 values
--   Mas_Vnr_Area       integer        445        0  continuous  numbers
--   Exter_Cond         text             5        0  categorical text, 5 values
--   Foundation         text             6        0  categorical text, 6 values
--   Bsmt_Cond          text             6        0  categorical text, 6 values
--   Bsmt_Exposure      text             5        0  categorical text, 5 values
--   BsmtFin_Type_1     text             7        0  categorical text, 7 values
--   BsmtFin_SF_1       integer          8        0  categorical integers, 8 values
--   BsmtFin_Type_2     text             7        0  categorical text, 7 values
--   BsmtFin_SF_2       integer        274        0  continuous  numbers
--   Bsmt_Unf_SF        integer      >1000        0  continuous  numbers
--   Total_Bsmt_SF      integer      >1000        0  continuous  numbers
--   Heating            text             6        0  categorical text, 6 values
--   Heating_QC         text             5        0  categorical text, 5 values
--   Central_Air        boolean          2        0  categorical booleans
--   Electrical         text             6        0  categorical text, 6 values
--   First_Flr_SF       integer      >1000        0  continuous  numbers
--   Second_Flr_SF      integer        635        0  continuous  numbers
--   Gr_Liv_Area        integer      >1000        0  continuous  numbers
--   Bsmt_Full_Bath     integer          4        0  categorical integers, 4 values
--   Bsmt_Half_Bath     integer          3        0  categorical integers, 3 values
--   Full_Bath          integer          5        0  categorical integers, 5 values
--   Half_Bath          integer          3        0  categorical integers, 3 values
--   Bedroom_AbvGr      integer          8        0  categorical integers, 8 values
--   Kitchen_AbvGr      integer          4        0  categorical integers, 4 values
--   TotRms_AbvGrd      integer         14        0  continuous  numbers
--   Functional         text             8        0  categorical text, 8 values
--   Fireplaces         integer          5        0  categorical integers, 5 values
--   Garage_Type        text             7        0  categorical text, 7 values
--   Garage_Finish      text             4        0  categorical text, 4 values
--   Garage_Cars        integer          6        0  categorical integers, 6 values
--   Garage_Area        integer        603        0  continuous  numbers
--   Garage_Cond        text             6        0  categorical text, 6 values
--   Paved_Drive        text             3        0  categorical text, 3 values
--   Wood_Deck_SF       integer        380        0  continuous  numbers
--   Open_Porch_SF      integer        252        0  continuous  numbers
--   Enclosed_Porch     integer        183        0  continuous  numbers
--   Three_season_porch integer         31        0  continuous  numbers
--   Screen_Porch       integer        121        0  continuous  numbers
--   Pool_Area          integer         14        0  continuous  numbers
--   Pool_QC            text             5        0  categorical text, 5 values
--   Fence              text             5        0  categorical text, 5 values
--   Misc_Feature       text             5     2824  categorical text, 5 values
--   Misc_Val           integer         38        0  continuous  numbers
--   Mo_Sold            integer         12        0  continuous  numbers
--   Year_Sold          integer          5        0  categorical integers, 5 values
--   Sale_Type          text            10        0  categorical text, 10 values
--   Sale_Condition     text             6        0  categorical text, 6 values
--   Sale_Price         integer      >1000        0  label       --label
--   Longitude          number       >1000        0  continuous  numbers
--   Latitude           number       >1000        0  continuous  numbers
--   is_test            integer          2        0  test flag   --test-column
CREATE TABLE "rt_rows" AS
SELECT ROW_NUMBER() OVER (ORDER BY _line) AS rt_id, _line,
  CASE WHEN CAST(s1."Sale_Price" AS REAL) > 0 THEN ln(CAST(s1."Sale_Price" AS REAL)) ELSE rt_check(0, 'label_transform log: the label ' || 'Sale_Price' || ' is ' || coalesce(s1."Sale_Price", 'NULL') || ' at line ' || _line || ', not a positive number') END AS "Sale_Price",
  rt_flag(s1."is_test", 'is_test', _line) AS "rt_test",
  s1."MS_SubClass" AS "MS_SubClass",
  s1."MS_Zoning" AS "MS_Zoning",
  s1."Lot_Frontage" AS "Lot_Frontage",
  s1."Lot_Area" AS "Lot_Area",
  s1."Street" AS "Street",
  s1."Alley" AS "Alley",
  s1."Lot_Shape" AS "Lot_Shape",
  s1."Land_Contour" AS "Land_Contour",
  s1."Utilities" AS "Utilities",
  s1."Lot_Config" AS "Lot_Config",
  s1."Land_Slope" AS "Land_Slope",
  s1."Neighborhood" AS "Neighborhood",
  s1."Condition_1" AS "Condition_1",
  s1."Condition_2" AS "Condition_2",
  s1."Bldg_Type" AS "Bldg_Type",
  s1."House_Style" AS "House_Style",
  s1."Overall_Cond" AS "Overall_Cond",
  s1."Year_Built" AS "Year_Built",
  s1."Year_Remod_Add" AS "Year_Remod_Add",
  s1."Roof_Style" AS "Roof_Style",
  s1."Roof_Matl" AS "Roof_Matl",
  s1."Exterior_1st" AS "Exterior_1st",
  s1."Exterior_2nd" AS "Exterior_2nd",
  CASE WHEN rt_missing(s1."Mas_Vnr_Type") THEN NULL ELSE s1."Mas_Vnr_Type" END AS "Mas_Vnr_Type",
  s1."Mas_Vnr_Area" AS "Mas_Vnr_Area",
  s1."Exter_Cond" AS "Exter_Cond",
  s1."Foundation" AS "Foundation",
  s1."Bsmt_Cond" AS "Bsmt_Cond",
  s1."Bsmt_Exposure" AS "Bsmt_Exposure",
  s1."BsmtFin_Type_1" AS "BsmtFin_Type_1",
  CASE WHEN rt_missing(s1."BsmtFin_SF_1") THEN NULL ELSE CAST(s1."BsmtFin_SF_1" AS INTEGER) END AS "BsmtFin_SF_1",
  s1."BsmtFin_Type_2" AS "BsmtFin_Type_2",
  s1."BsmtFin_SF_2" AS "BsmtFin_SF_2",
  s1."Bsmt_Unf_SF" AS "Bsmt_Unf_SF",
  s1."Total_Bsmt_SF" AS "Total_Bsmt_SF",
  s1."Heating" AS "Heating",
  s1."Heating_QC" AS "Heating_QC",
  s1."Central_Air" AS "Central_Air",
  s1."Electrical" AS "Electrical",
  s1."First_Flr_SF" AS "First_Flr_SF",
  s1."Second_Flr_SF" AS "Second_Flr_SF",
  s1."Gr_Liv_Area" AS "Gr_Liv_Area",
  CASE WHEN rt_missing(s1."Bsmt_Full_Bath") THEN NULL ELSE CAST(s1."Bsmt_Full_Bath" AS INTEGER) END AS "Bsmt_Full_Bath",
  CASE WHEN rt_missing(s1."Bsmt_Half_Bath") THEN NULL ELSE CAST(s1."Bsmt_Half_Bath" AS INTEGER) END AS "Bsmt_Half_Bath",
  CASE WHEN rt_missing(s1."Full_Bath") THEN NULL ELSE CAST(s1."Full_Bath" AS INTEGER) END AS "Full_Bath",
  CASE WHEN rt_missing(s1."Half_Bath") THEN NULL ELSE CAST(s1."Half_Bath" AS INTEGER) END AS "Half_Bath",
  CASE WHEN rt_missing(s1."Bedroom_AbvGr") THEN NULL ELSE CAST(s1."Bedroom_AbvGr" AS INTEGER) END AS "Bedroom_AbvGr",
  CASE WHEN rt_missing(s1."Kitchen_AbvGr") THEN NULL ELSE CAST(s1."Kitchen_AbvGr" AS INTEGER) END AS "Kitchen_AbvGr",
  s1."TotRms_AbvGrd" AS "TotRms_AbvGrd",
  s1."Functional" AS "Functional",
  CASE WHEN rt_missing(s1."Fireplaces") THEN NULL ELSE CAST(s1."Fireplaces" AS INTEGER) END AS "Fireplaces",
  s1."Garage_Type" AS "Garage_Type",
  s1."Garage_Finish" AS "Garage_Finish",
  CASE WHEN rt_missing(s1."Garage_Cars") THEN NULL ELSE CAST(s1."Garage_Cars" AS INTEGER) END AS "Garage_Cars",
  s1."Garage_Area" AS "Garage_Area",
  s1."Garage_Cond" AS "Garage_Cond",
  s1."Paved_Drive" AS "Paved_Drive",
  s1."Wood_Deck_SF" AS "Wood_Deck_SF",
  s1."Open_Porch_SF" AS "Open_Porch_SF",
  s1."Enclosed_Porch" AS "Enclosed_Porch",
  s1."Three_season_porch" AS "Three_season_porch",
  s1."Screen_Porch" AS "Screen_Porch",
  s1."Pool_Area" AS "Pool_Area",
  s1."Pool_QC" AS "Pool_QC",
  s1."Fence" AS "Fence",
  CASE WHEN rt_missing(s1."Misc_Feature") THEN NULL ELSE s1."Misc_Feature" END AS "Misc_Feature",
  s1."Misc_Val" AS "Misc_Val",
  s1."Mo_Sold" AS "Mo_Sold",
  CASE WHEN rt_missing(s1."Year_Sold") THEN NULL ELSE CAST(s1."Year_Sold" AS INTEGER) END AS "Year_Sold",
  s1."Sale_Type" AS "Sale_Type",
  s1."Sale_Condition" AS "Sale_Condition",
  s1."Longitude" AS "Longitude",
  s1."Latitude" AS "Latitude"
FROM "ames" AS s1
ORDER BY _line;
CREATE TABLE rt_train AS
SELECT *,
  CASE WHEN ROW_NUMBER() OVER (ORDER BY rt_hash(0, _line), _line) <= min(CAST(round(0.20000000000000001 * COUNT(*) OVER ()) AS INTEGER), COUNT(*) OVER () - 1) THEN 1 ELSE 0 END AS rt_validation
FROM rt_rows WHERE rt_test = 0
ORDER BY _line;
CREATE TABLE rt_test AS SELECT * FROM rt_rows WHERE rt_test = 1 ORDER BY _line;
SELECT rt_check((SELECT count(*) FROM rt_train) > 0, 'every row is a test row (is_test)');
CREATE TABLE meta(key, value);
INSERT INTO meta VALUES
  ('train_table', 'rt_train'),
  ('test_table', 'rt_test'),
  ('label', 'Sale_Price'),
  ('id', 'rt_id'),
  ('validation', 'rt_validation'),
  ('label_transform', 'log,standardize'),
  ('categorical', 'MS_SubClass,MS_Zoning,Street,Alley,Lot_Shape,Land_Contour,Utilities,Lot_Config,Land_Slope,Neighborhood,Condition_1,Condition_2,Bldg_Type,House_Style,Overall_Cond,Roof_Style,Roof_Matl,Exterior_1st,Exterior_2nd,Mas_Vnr_Type,Exter_Cond,Foundation,Bsmt_Cond,Bsmt_Exposure,BsmtFin_Type_1,BsmtFin_SF_1,BsmtFin_Type_2,Heating,Heating_QC,Central_Air,Electrical,Bsmt_Full_Bath,Bsmt_Half_Bath,Full_Bath,Half_Bath,Bedroom_AbvGr,Kitchen_AbvGr,Functional,Fireplaces,Garage_Type,Garage_Finish,Garage_Cars,Garage_Cond,Paved_Drive,Pool_QC,Fence,Misc_Feature,Year_Sold,Sale_Type,Sale_Condition'),
  ('continuous', 'Lot_Frontage,Lot_Area,Year_Built,Year_Remod_Add,Mas_Vnr_Area,BsmtFin_SF_2,Bsmt_Unf_SF,Total_Bsmt_SF,First_Flr_SF,Second_Flr_SF,Gr_Liv_Area,TotRms_AbvGrd,Garage_Area,Wood_Deck_SF,Open_Porch_SF,Enclosed_Porch,Three_season_porch,Screen_Porch,Pool_Area,Misc_Val,Mo_Sold,Longitude,Latitude');
