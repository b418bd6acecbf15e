-- Nucleic catalog, schema 9: quiet hours keep the device's IANA time zone (evaluated in that
-- zone, so they follow daylight saving) instead of a UTC offset taken when they were set.
-- Whole-hour offsets become the matching fixed zone (`Etc/GMT-2` is UTC+2: POSIX signs); other
-- offsets cannot be named and lose their quiet hours (the device sets them again).

ALTER TABLE push_subscriptions ADD COLUMN time_zone TEXT;

UPDATE push_subscriptions
   SET time_zone = CASE
         WHEN utc_offset = 0 THEN 'UTC'
         WHEN utc_offset > 0 THEN 'Etc/GMT-' || (utc_offset / 60)
         ELSE 'Etc/GMT+' || (-utc_offset / 60)
       END
 WHERE quiet_from IS NOT NULL AND utc_offset IS NOT NULL AND utc_offset % 60 = 0
   AND abs(utc_offset) <= 12 * 60;

UPDATE push_subscriptions SET quiet_from = NULL, quiet_to = NULL WHERE time_zone IS NULL;

UPDATE push_subscriptions SET utc_offset = NULL;
