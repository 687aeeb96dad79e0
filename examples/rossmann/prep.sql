-- prep.sql — the Rossmann feature engineering of Horovod's
-- examples/spark/keras/keras_spark_rossmann_estimator.py, column for column,
-- for `ringtrain prep` (SQLite).
--
-- Input: one table per CSV file (train, test, store, store_states,
-- state_names, googletrend, weather), every value the text of the file,
-- empty fields NULL, plus _line (the row's line in its file).
-- Output: train_features and test_features, named in meta.
-- Functions ringtrain prep adds: iso_week(date), valid_date(text),
-- rt_check(ok, message), rt_bad_rows() (data/rt_prep.h).
--
-- Where Spark and SQLite differ, the seed's result is kept: weekofyear() is
-- iso_week(), datediff(a, b) is julianday(a) - julianday(b), booleans are
-- 0/1 (False sorts before True either way), and string columns stay text,
-- so their vocabularies sort as strings ("1" < "10" < "2"), as Spark's
-- CSV reader (no inferSchema) leaves them.

-- ---- bad rows: reported with file and line, or dropped with --skip-bad-rows ----
INSERT INTO bad_rows
SELECT 'train', _line, 'Date ' || quote(Date) || ' is not a YYYY-MM-DD date'
  FROM train WHERE NOT valid_date(Date)
UNION ALL
SELECT 'train', _line, 'Store ' || quote(Store) || ' is not a store number'
  FROM train WHERE CAST(Store AS INTEGER) || '' IS NOT Store OR CAST(Store AS INTEGER) < 1
UNION ALL
SELECT 'train', _line, 'DayOfWeek ' || quote(DayOfWeek) || ' is not 1 to 7'
  FROM train WHERE DayOfWeek NOT IN ('1', '2', '3', '4', '5', '6', '7') OR DayOfWeek IS NULL
UNION ALL
SELECT 'train', _line, 'Sales ' || quote(Sales) || ' is not a whole number >= 0'
  FROM train WHERE CAST(Sales AS INTEGER) || '' IS NOT Sales OR CAST(Sales AS INTEGER) < 0
UNION ALL
SELECT 'train', _line, 'Open, Promo or SchoolHoliday is not 0 or 1'
  FROM train WHERE Open NOT IN ('0', '1') OR Promo NOT IN ('0', '1')
                OR SchoolHoliday NOT IN ('0', '1') OR Open IS NULL OR Promo IS NULL
                OR SchoolHoliday IS NULL
UNION ALL
SELECT 'train', _line, 'StateHoliday ' || quote(StateHoliday) || ' is not 0, a, b or c'
  FROM train WHERE StateHoliday NOT IN ('0', 'a', 'b', 'c') OR StateHoliday IS NULL
UNION ALL
SELECT 'test', _line, 'Date ' || quote(Date) || ' is not a YYYY-MM-DD date'
  FROM test WHERE NOT valid_date(Date)
UNION ALL
SELECT 'test', _line, 'Id ' || quote(Id) || ' is not a whole number'
  FROM test WHERE CAST(Id AS INTEGER) || '' IS NOT Id
UNION ALL
SELECT 'test', _line, 'StateHoliday ' || quote(StateHoliday) || ' is not 0, a, b or c'
  FROM test WHERE StateHoliday NOT IN ('0', 'a', 'b', 'c') OR StateHoliday IS NULL;

SELECT rt_bad_rows();  -- stops here unless --skip-bad-rows
DELETE FROM train WHERE (SELECT skip_bad_rows FROM prep_options)
                    AND _line IN (SELECT line FROM bad_rows WHERE tbl = 'train');
DELETE FROM test WHERE (SELECT skip_bad_rows FROM prep_options)
                   AND _line IN (SELECT line FROM bad_rows WHERE tbl = 'test');

-- ---- prepare_google_trend(): week start date and state, NI -> HB,NI --------------
CREATE TABLE trend_all AS
SELECT file,
       substr(week, 1, instr(week, ' -') - 1) AS Date,
       CASE WHEN file LIKE 'Rossmann\_DE\_%' ESCAPE '\'
            THEN (CASE substr(file, 13) WHEN 'NI' THEN 'HB,NI' ELSE substr(file, 13) END)
            ELSE '' END AS State,
       trend
  FROM googletrend;
CREATE TABLE trend_s AS
SELECT State, CAST(strftime('%Y', Date) AS INTEGER) AS Year, iso_week(Date) AS Week, trend, file
  FROM trend_all;
CREATE INDEX trend_s_key ON trend_s(State, Year, Week);
CREATE TABLE trend_de AS
SELECT Year, Week, trend AS trend_de FROM trend_s WHERE file = 'Rossmann_DE';
CREATE INDEX trend_de_key ON trend_de(Year, Week);

-- ---- weather joined with the state names ------------------------------------------
CREATE TABLE weather_s AS
SELECT n.State AS State, w.*
  FROM weather w JOIN state_names n ON w.file = n.StateName;
CREATE INDEX weather_s_key ON weather_s(State, Date);

CREATE TABLE store_s AS
SELECT s.*, ss.State AS State FROM store s JOIN store_states ss USING (Store);
CREATE INDEX store_s_key ON store_s(Store);

-- ---- prepare_df() on train and test ----------------------------------------------
-- expand_date, booleans, the joins, the null fixes, competition and promo2
-- durations: once, over both tables (`part` says which; test has Id and no
-- Sales), as the seed applies one function to both.
CREATE TABLE prepared AS
WITH d AS (
  SELECT part, t.Id, t.Store, t.DayOfWeek, t.Date, t.Sales, t.Customers,
         t.Open != '0' AS Open, t.Promo != '0' AS Promo,
         t.StateHoliday != '0' AS StateHoliday, t.SchoolHoliday != '0' AS SchoolHoliday,
         CAST(strftime('%Y', t.Date) AS INTEGER) AS Year,
         CAST(strftime('%m', t.Date) AS INTEGER) AS Month,
         iso_week(t.Date) AS Week,
         CAST(strftime('%d', t.Date) AS INTEGER) AS Day
    FROM (SELECT 'train' AS part, NULL AS Id, Store, DayOfWeek, Date, Sales, Customers, Open,
                 Promo, StateHoliday, SchoolHoliday FROM train
          UNION ALL
          SELECT 'test', Id, Store, DayOfWeek, Date, NULL, NULL, Open, Promo, StateHoliday,
                 SchoolHoliday FROM test) t),
j AS (
  SELECT d.*, s.StoreType, s.Assortment, s.CompetitionDistance,
         COALESCE(s.CompetitionOpenSinceMonth, '1') AS CompetitionOpenSinceMonth,
         COALESCE(s.CompetitionOpenSinceYear, '1900') AS CompetitionOpenSinceYear,
         s.Promo2, COALESCE(s.Promo2SinceWeek, '1') AS Promo2SinceWeek,
         COALESCE(s.Promo2SinceYear, '1900') AS Promo2SinceYear, s.PromoInterval, s.State,
         tr.trend, de.trend_de,
         w.Max_TemperatureC, w.Mean_TemperatureC, w.Min_TemperatureC, w.Max_Humidity,
         w.Mean_Humidity, w.Min_Humidity, w.Max_Wind_SpeedKm_h, w.Mean_Wind_SpeedKm_h,
         w.CloudCover, w.Events
    FROM d
    JOIN store_s s ON s.Store = d.Store
    JOIN trend_s tr ON tr.State = s.State AND tr.Year = d.Year AND tr.Week = d.Week
    JOIN trend_de de ON de.Year = d.Year AND de.Week = d.Week
    JOIN weather_s w ON w.State = s.State AND w.Date = d.Date)
SELECT j.*,
       CASE WHEN CAST(CompetitionOpenSinceYear AS INTEGER) > 1900
            THEN MAX(0, MIN(720, CAST(julianday(Date) - julianday(printf('%04d-%02d-15',
                   CAST(CompetitionOpenSinceYear AS INTEGER),
                   CAST(CompetitionOpenSinceMonth AS INTEGER))) AS INTEGER)))
            ELSE 0 END / 30 AS CompetitionMonthsOpen,
       CASE WHEN CAST(Promo2SinceYear AS INTEGER) > 1900
            THEN MAX(0, MIN(175, CAST(julianday(Date) - julianday(date(printf('%04d-01-01',
                   CAST(Promo2SinceYear AS INTEGER)),
                   printf('%+d days', (CAST(Promo2SinceWeek AS INTEGER) - 1) * 7))) AS INTEGER)))
            ELSE 0 END / 7 AS Promo2Weeks
  FROM j;
CREATE TABLE train_p AS SELECT * FROM prepared WHERE part = 'train';
CREATE TABLE test_p AS SELECT * FROM prepared WHERE part = 'test';

-- the seed's `assert num_rows == df.count(), 'lost rows in joins'`
SELECT rt_check((SELECT count(*) FROM train_p) = (SELECT count(*) FROM train),
                printf('lost rows in the joins of train: %d rows in, %d after joining store, '
                       || 'store_states, googletrend and weather (a store without a state, or a '
                       || 'date without its trend week or weather day?)',
                       (SELECT count(*) FROM train), (SELECT count(*) FROM train_p)));
SELECT rt_check((SELECT count(*) FROM test_p) = (SELECT count(*) FROM test),
                printf('lost rows in the joins of test: %d rows in, %d after the joins',
                       (SELECT count(*) FROM test), (SELECT count(*) FROM test_p)));

-- ---- add_elapsed(): days since the last / until the next promo and holidays,
-- per store over train and test together.  The seed walks each store's rows
-- by date: "After" counts from the last day with the event (or the store's
-- first day), "Before" to the next one (or the store's last day), <= 0.
CREATE TABLE elapsed AS
WITH u AS (
  SELECT Date, Store, Promo, StateHoliday, SchoolHoliday FROM train_p
  UNION ALL
  SELECT Date, Store, Promo, StateHoliday, SchoolHoliday FROM test_p),
w AS (
  SELECT Date, Store,
    MAX(CASE WHEN Promo THEN Date END) OVER s_up AS lastPromo,
    MAX(CASE WHEN StateHoliday THEN Date END) OVER s_up AS lastStateHoliday,
    MAX(CASE WHEN SchoolHoliday THEN Date END) OVER s_up AS lastSchoolHoliday,
    MIN(CASE WHEN Promo THEN Date END) OVER s_down AS nextPromo,
    MIN(CASE WHEN StateHoliday THEN Date END) OVER s_down AS nextStateHoliday,
    MIN(CASE WHEN SchoolHoliday THEN Date END) OVER s_down AS nextSchoolHoliday,
    MIN(Date) OVER (PARTITION BY Store) AS firstDate,
    MAX(Date) OVER (PARTITION BY Store) AS lastDate
  FROM u
  WINDOW s_up AS (PARTITION BY Store ORDER BY Date ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
         s_down AS (PARTITION BY Store ORDER BY Date ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING))
SELECT Date, Store,
  CAST(julianday(Date) - julianday(COALESCE(nextPromo, lastDate)) AS INTEGER) AS BeforePromo,
  CAST(julianday(Date) - julianday(COALESCE(nextStateHoliday, lastDate)) AS INTEGER) AS BeforeStateHoliday,
  CAST(julianday(Date) - julianday(COALESCE(nextSchoolHoliday, lastDate)) AS INTEGER) AS BeforeSchoolHoliday,
  CAST(julianday(Date) - julianday(COALESCE(lastPromo, firstDate)) AS INTEGER) AS AfterPromo,
  CAST(julianday(Date) - julianday(COALESCE(lastStateHoliday, firstDate)) AS INTEGER) AS AfterStateHoliday,
  CAST(julianday(Date) - julianday(COALESCE(lastSchoolHoliday, firstDate)) AS INTEGER) AS AfterSchoolHoliday
FROM w;
CREATE INDEX elapsed_key ON elapsed(Store, Date);

-- ---- the selected features: zero sales dropped, Sales -> log, validation -----------
-- The 36 feature columns once, for train and test rows together; the two
-- result tables add what differs (extra columns are not read by prep).
-- The test period shifted back one year (365 days) is the validation set:
-- Date > min(test.Date) - 365 and Date <= max(test.Date) - 365.
CREATE TABLE features AS
SELECT p.part, p.Sales AS RawSales, p.Id AS RawId,
       p.Store, p.State, p.DayOfWeek, p.Year, p.Month, p.Day, p.Week, p.CompetitionMonthsOpen,
       p.Promo2Weeks, p.StoreType, p.Assortment, p.PromoInterval, p.CompetitionOpenSinceYear,
       p.Promo2SinceYear, p.Events, p.Promo, p.StateHoliday, p.SchoolHoliday,
       p.CompetitionDistance, p.Max_TemperatureC, p.Mean_TemperatureC, p.Min_TemperatureC,
       p.Max_Humidity, p.Mean_Humidity, p.Min_Humidity, p.Max_Wind_SpeedKm_h,
       p.Mean_Wind_SpeedKm_h, p.CloudCover, p.trend, p.trend_de,
       e.BeforePromo, e.AfterPromo, e.AfterStateHoliday, e.BeforeStateHoliday,
       e.BeforeSchoolHoliday, e.AfterSchoolHoliday, p.Date
  FROM prepared p JOIN elapsed e ON e.Store = p.Store AND e.Date = p.Date;

CREATE TABLE train_features AS
SELECT f.*, ln(CAST(f.RawSales AS REAL)) AS Sales,
       (f.Date > date((SELECT MIN(Date) FROM test), '-365 days')
        AND f.Date <= date((SELECT MAX(Date) FROM test), '-365 days')) AS Validation
  FROM features f
 WHERE f.part = 'train' AND CAST(f.RawSales AS INTEGER) > 0
 ORDER BY f.Date, CAST(f.Store AS INTEGER);

CREATE TABLE test_features AS
SELECT f.*, CAST(f.RawId AS INTEGER) AS Id
  FROM features f
 WHERE f.part = 'test'
 ORDER BY CAST(f.RawId AS INTEGER);

SELECT rt_check((SELECT count(*) FROM test_features) = (SELECT count(*) FROM test),
                'lost test rows joining the elapsed times');

-- ---- what ringtrain prep writes ------------------------------------------------
CREATE TABLE meta(key TEXT, value);
INSERT INTO meta VALUES
  ('train_table', 'train_features'),
  ('test_table', 'test_features'),
  ('categorical', 'Store, State, DayOfWeek, Year, Month, Day, Week, CompetitionMonthsOpen, '
                  || 'Promo2Weeks, StoreType, Assortment, PromoInterval, '
                  || 'CompetitionOpenSinceYear, Promo2SinceYear, Events, Promo, StateHoliday, '
                  || 'SchoolHoliday'),
  ('continuous', 'CompetitionDistance, Max_TemperatureC, Mean_TemperatureC, Min_TemperatureC, '
                 || 'Max_Humidity, Mean_Humidity, Min_Humidity, Max_Wind_SpeedKm_h, '
                 || 'Mean_Wind_SpeedKm_h, CloudCover, trend, trend_de, BeforePromo, AfterPromo, '
                 || 'AfterStateHoliday, BeforeStateHoliday, BeforeSchoolHoliday, '
                 || 'AfterSchoolHoliday'),
  ('label', 'Sales'),
  ('label_transform', 'log'),
  ('max_label', (SELECT MAX(CAST(Sales AS INTEGER)) FROM train_p)),
  ('validation', 'Validation'),
  ('id', 'Id'),
  ('date', 'Date');
