-- parkgate schema v18 (SQLite): how many times an ask's post was sent to its platform.
--
-- channel_posts.sends counts the post job's platform calls begun: the deliverer adds one
-- before each call and records the post's location after it. More sends than the one
-- recorded means an earlier call may have posted a message whose result was never
-- recorded (a process killed mid-call, a lost answer): a press on such a message, in the
-- chat the ask was posted to, is taken as the ask's own. (On SQLite another process's new
-- channel job is seen by the change check, PRAGMA data_version, as any commit is.)
ALTER TABLE channel_posts ADD COLUMN sends INTEGER NOT NULL DEFAULT 0;
