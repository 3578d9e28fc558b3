"""The exact prompts and parsers of Chain-of-Table (Wang et al., ICLR 2024, App. D and E; the
official code google-research/chain-of-table, ``utils/chain.py`` and ``operations/*.py``).

The demonstration texts below are copied verbatim from the official repository (Apache-2.0;
the ``f_row`` / ``f_col`` demos come from its ``third_party/select_column_row_prompts``,
MIT, Alibaba Research 2022), typos included ("anwser", "statemnet"), because a reproduction of
the protocol must send the prompts the paper's models saw.

Builders (each returns the full prompt; the model's continuation is parsed by the matching
parser, which returns None when the format is not found; callers count those):

- :func:`plan_prompt` (DynamicPlan) -> :func:`parse_plan`;
- :func:`add_column_prompt`, :func:`add_column_row_prompt` -> :func:`parse_add_column`,
  :func:`parse_row_value`;
- :func:`select_row_prompt` -> :func:`parse_rows`; :func:`select_column_prompt` ->
  :func:`parse_columns`; :func:`group_prompt` -> :func:`parse_group`;
  :func:`sort_prompt` -> :func:`parse_sort`;
- :func:`final_query_prompt` (TabFact's simple query with the four demos and the group
  block) -> :func:`parse_answer`.

One deviation: :func:`parse_answer` reads the first word of the reply (official: the whole
stripped reply must equal yes/no/true/false), since a small model often continues after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pandas as pd

from .chain import END, ChainState
from .tables import as_table, linearize

__all__ = [
    "ADD_COLUMN_DEMO",
    "GENERAL_DEMO",
    "GROUP_COLUMN_DEMO",
    "PLAN_FULL_DEMO_SIMPLE",
    "SELECT_COLUMN_DEMO",
    "SELECT_ROW_DEMO",
    "SORT_COLUMN_DEMO",
    "add_column_prompt",
    "add_column_row_prompt",
    "final_query_prompt",
    "group_prompt",
    "mask_digits",
    "parse_add_column",
    "parse_answer",
    "parse_columns",
    "parse_group",
    "parse_plan",
    "parse_row_value",
    "parse_rows",
    "parse_sort",
    "plan_prompt",
    "select_column_prompt",
    "select_row_prompt",
    "sort_prompt",
]

PLAN_ADD_COLUMN_DEMO = """If the table does not have the needed column to tell whether the statement is True or False, we use f_add_column() to add a new column for it. For example,
/*
col : rank | lane | player | time
row 1 :  | 5 | olga tereshkova (kaz) | 51.86
row 2 :  | 6 | manjeet kaur (ind) | 52.17
row 3 :  | 3 | asami tanno (jpn) | 53.04
*/
Statement: there are one athlete from japan.
Function: f_add_column(country of athlete)
Explanation: The statement is about the number of athletes from japan. We need to known the country of each athlete. There is no column of the country of athletes. We add a column "country of athlete"."""

PLAN_SELECT_ROW_DEMO = """If the table only needs a few rows to tell whether the statement is True or False, we use f_select_row() to select these rows for it. For example,
/*
table caption : jeep grand cherokee.
col : years | displacement | engine | power | torque
row 1 : 1999 - 2004 | 4.0l (242cid) | power tech i6 | - | 3000 rpm
row 2 : 1999 - 2004 | 4.7l (287cid) | powertech v8 | - | 3200 rpm
row 3 : 2002 - 2004 | 4.7l (287cid) | high output powertech v8 | - | -
row 4 : 1999 - 2001 | 3.1l diesel | 531 ohv diesel i5 | - | -
row 5 : 2002 - 2004 | 2.7l diesel | om647 diesel i5 | - | -
*/
Statement: the jeep grand cherokee with the om647 diesel i5 had the third lowest numbered displacement.
Function: f_select_row(row 1, row 4, row 5)
Explanation: The statement wants to check the om647 diesel i5 had third lowest numbered displacement. We need to know the first three low numbered displacement and all rows that power is om647 diesel i5. We select the row 1, row 4, row 5."""

PLAN_SELECT_COLUMN_DEMO = """If the table only needs a few columns to tell whether the statement is True or False, we use f_select_column() to select these columns for it. For example,
/*
col : code | county | former province | area (km2) | population | capital
row 1 : 1 | mombasa | coast | 212.5 | 939,370 | mombasa (city)
row 2 : 2 | kwale | coast | 8,270.3 | 649,931 | kwale
row 3 : 3 | kilifi | coast | 12,245.9 | 1,109,735 | kilifi
*/
Statement: momasa is a county with population higher than 500000.
Function: f_select_column(county, population)
Explanation: The statement wants to check momasa county with population higher than 500000. We need to know the county and its population. We select the column "county" and column "population"."""

PLAN_GROUP_COLUMN_DEMO = """If the statement is about items with the same value and the number of these items, we use f_group_column() to group the items. For example,
/*
col : district | name | party | residence | first served
row 1 : district 1 | nelson albano | dem | vineland | 2006
row 2 : district 1 | robert andrzejczak | dem | middle twp. | 2013†
row 3 : district 2 | john f. amodeo | rep | margate | 2008
*/
Statement: there are 5 districts are democratic
Function: f_group_column(party)
Explanation: The statement wants to check 5 districts are democratic. We need to know the number of dem in the table. We group the rows according to column "party"."""

PLAN_SORT_COLUMN_DEMO = """If the statement is about the order of items in a column, we use f_sort_column() to sort the items. For example,
/*
col : position | club | played | points
row 1 : 1 | malaga cf | 42 | 79
row 10 : 10 | cp merida | 42 | 59
row 3 : 3 | cd numancia | 42 | 73
*/
Statement: cd numancia placed in the last position.
Function: f_sort_column(position)
Explanation: The statement wants to check about cd numancia in the last position. We need to know the order of position from last to front. We sort the rows according to column "position"."""

PLAN_FULL_DEMO_SIMPLE = """Here are examples of using the operations to tell whether the statement is True or False.

/*
col : date | division | league | regular season | playoffs | open cup | avg. attendance
row 1 : 2001/01/02 | 2 | usl a-league | 4th, western | quarterfinals | did not qualify | 7,169
row 2 : 2002/08/06 | 2 | usl a-league | 2nd, pacific | 1st round | did not qualify | 6,260
row 5 : 2005/03/24 | 2 | usl first division | 5th | quarterfinals | 4th round | 6,028
*/
Statement: 2005 is the last year where this team was a part of the usl a-league?
Function Chain: f_add_column(year) -> f_select_row(row 1, row 2) -> f_select_column(year, league) -> f_sort_column(year) -> <END>

*/
col : rank | lane | athlete | time
row 1 : 1 | 6 | manjeet kaur (ind) | 52.17
row 2 : 2 | 5 | olga tereshkova (kaz) | 51.86
row 3 : 3 | 4 | pinki pramanik (ind) | 53.06
*/
Statement: There are 10 athletes from India.
Function Chain: f_add_column(country of athletes) -> f_select_row(row 1, row 3) -> f_select_column(athlete, country of athletes) -> f_group_column(country of athletes) -> <END>

/*
col : week | when | kickoff | opponent | results; final score | results; team record | game site | attendance
row 1 : 1 | saturday, april 13 | 7:00 p.m. | at rhein fire | w 27–21 | 1–0 | rheinstadion | 32,092
row 2 : 2 | saturday, april 20 | 7:00 p.m. | london monarchs | w 37–3 | 2–0 | waldstadion | 34,186
row 3 : 3 | sunday, april 28 | 6:00 p.m. | at barcelona dragons | w 33–29 | 3–0 | estadi olímpic de montjuïc | 17,503
*/
Statement: the competition with highest points scored is played on April 20.
Function Chain: f_add_column(points scored) -> f_select_row(*) -> f_select_column(when, points scored) -> f_sort_column(points scored) -> <END>

/*
col : iso/iec standard | status | wg
row 1 : iso/iec tr 19759 | published (2005) | 20
row 2 : iso/iec 15288 | published (2008) | 7
row 3 : iso/iec 12207 | published (2011) | 7
*/
Statement: 2 standards are published in 2011
Function Chain: f_add_column(year) -> f_select_row(row 3) -> f_select_column(year) -> f_group_column(year) -> <END>

Here are examples of using the operations to tell whether the statement is True or False."""

ADD_COLUMN_DEMO = """To tell the statement is true or false, we can first use f_add_column() to add more columns to the table.

The added columns should have these data types:
1. Numerical: the numerical strings that can be used in sort, sum
2. Datetype: the strings that describe a date, such as year, month, day
3. String: other strings

/*
col : week | when | kickoff | opponent | results; final score | results; team record | game site | attendance
row 1 : 1 | saturday, april 13 | 7:00 p.m. | at rhein fire | w 27–21 | 1–0 | rheinstadion | 32,092
row 2 : 2 | saturday, april 20 | 7:00 p.m. | london monarchs | w 37–3 | 2–0 | waldstadion | 34,186
row 3 : 3 | sunday, april 28 | 6:00 p.m. | at barcelona dragons | w 33–29 | 3–0 | estadi olímpic de montjuïc | 17,503
*/
Statement: april 20 is the date of the competition with highest attendance.
The existing columns are: "week", "when", "kickoff", "opponent", "results; final score", "results; team record", "game site", "attendance".
Explanation: To tell this statement is true or false, we need to know the attendence number of each competition. We extract the value from column "attendance" and create a different column "attendance number" for each row. The datatype is numerical.
Therefore, the answer is: f_add_column(attendance number). The value: 32092 | 34186 | 17503

/*
col : rank | lane | player | time
row 1 :  | 5 | olga tereshkova (kaz) | 51.86
row 2 :  | 6 | manjeet kaur (ind) | 52.17
row 3 :  | 3 | asami tanno (jpn) | 53.04
*/
Statement: there are one athlete from japan.
The existing columns are: rank, lane, player, time.
Explanation: To tell this statement is true or false, we need to know the country of each athelte. We extract the value from column "player" and create a different column "country of athletes" for each row. The datatype is string.
Therefore, the answer is: f_add_column(country of athletes). The value: kaz | ind | jpn

/*
col : year | competition | venue | position | notes
row 1 : 1991 | european junior championships | thessaloniki, greece | 10th | 4.90 m
row 2 : 1992 | world junior championships | seoul, south korea | 1st | 5.45 m
row 3 : 1996 | european indoor championships | stockholm, sweden | 14th (q) | 5.45 m
*/
Statement: laurens place 1st in 1991.
The existing columns are: year, competition, venue, position, notes.
Explanation: To tell this statement is true or false, we need to know the place of each competition. We extract the value from column "position" and create a different column "placing result" for each row. The datatype is numerical.
Therefore, the answer is: f_add_column(placing result). The value: 10 | 1 | 14

/*
col : iso/iec standard | status | wg
row 1 : iso/iec tr 19759 | published (2005) | 20
row 2 : iso/iec 15288 | published (2008) | 7
row 3 : iso/iec 12207 | published (2008) | 7
*/
Statement: the standards published three times in 2008.
The existing columns are: iso/iec standard, title, status, description, wg.
Explanation: To tell this statement is true or false, we need to know the year of each standard. We extract the value from column "status" and create a different column "year of standard" for each row. The datatype is datetype.
Therefore, the answer is: f_add_column(year of standard). The value: 2005 | 2008 | 2008

/*
col : match | date | ground | opponent | score1 | pos. | pts. | gd
row 1 : 1 | 15 august | a | bayer uerdingen | 3 – 0 | 1 | 2 | 3
row 2 : 2 | 22 july | h | 1. fc kaiserslautern | 1 – 0 | 1 | 4 | 4
row 3 : 4 | 29 september | h | dynamo dresden | 3 – 1 | 1 | 6 | 6
*/
Statement: they play 5 times in august.
The existing columns are: match, date, ground, opponent, score1, pos., pts., gd.
Explanation: To tell this statement is true or false, we need to know the month of each match. We extract the value from column "date" and create a different column "month" for each row. The datatype is datetype.
Therefore, the answer is: f_add_column(month). The value: august | july | september

/*
table caption : 1984 u.s. open (golf)
col : place | player | country | score | to par
row 1 : 1 | hale irwin | united states | 68 + 68 = 136 | - 4
row 2 : 2 | fuzzy zoeller | united states | 71 + 66 = 137 | -- 3
row 3 : t3 | david canipe | united states | 69 + 69 = 138 | - 2
*/
Statement: david canipe of united states has 138 score
The existing columns are: place, player, country, score, to par.
Explanation: To tell this statement is true or false, we need to know the score values of each player. We extract the value from column "score" and create a different column "score value" for each row. The datatype is numerical.
Therefore, the answer is: f_add_column(score value). The value: 136 | 137 | 138

/*
col : code | county | former province | area (km2) | population; census 2009 | capital
row 1 : 1 | mombasa | coast | 212.5 | 939,370 | mombasa (city)
row 2 : 2 | kwale | coast | 8,270.3 | 649,931 | kwale
row 3 : 3 | kilifi | coast | 12,245.9 | 1,109,735 | kilifi
*/
Statement: kwale has a population in 2009 higher than 500,000.
The existing columns are: code, county, former province, area (km2), population; census 2009, capital.
Explanation: To tell this statement is true or false, we need to know the population of each county. We extract the value from column "population; census 2009" and create a different column "population" for each row. The datatype is numerical.
Therefore, the answer is: f_add_column(population). The value: 939370 | 649311 | 1109735"""

SELECT_ROW_DEMO = """Using f_row() api to select relevant rows in the given table that support or oppose the statement.
Please use f_row([*]) to select all rows in the table.

/*
table caption : 1972 vfl season.
col : home team | home team score | away team | away team score | venue | crowd | date
row 1 : st kilda | 13.12 (90) | melbourne | 13.11 (89) | moorabbin oval | 18836 | 19 august 1972
row 2 : south melbourne | 9.12 (66) | footscray | 11.13 (79) | lake oval | 9154 | 19 august 1972
row 3 : richmond | 20.17 (137) | fitzroy | 13.22 (100) | mcg | 27651 | 19 august 1972
row 4 : geelong | 17.10 (112) | collingwood | 17.9 (111) | kardinia park | 23108 | 19 august 1972
row 5 : north melbourne | 8.12 (60) | carlton | 23.11 (149) | arden street oval | 11271 | 19 august 1972
row 6 : hawthorn | 15.16 (106) | essendon | 12.15 (87) | vfl park | 36749 | 19 august 1972
*/
statement : the away team with the highest score is fitzroy.
explain : the statement want to check the highest away team score. we need to compare score of away team fitzroy with all others, so we need all rows. use * to represent all rows in the table.
The answer is : f_row([*])

/*
table caption : list of largest airlines in central america & the caribbean.
col : rank | airline | country | fleet size | remarks
row 1 : 1 | caribbean airlines | trinidad and tobago | 22 | largest airline in the caribbean
row 2 : 2 | liat | antigua and barbuda | 17 | second largest airline in the caribbean
row 3 : 3 | cubana de aviaciã cubicn | cuba | 14 | operational since 1929
row 4 : 4 | inselair | curacao | 12 | operational since 2006
row 5 : 5 | dutch antilles express | curacao | 4 | curacao second national carrier
row 6 : 6 | air jamaica | trinidad and tobago | 5 | parent company is caribbean airlines
row 7 : 7 | tiara air | aruba | 3 | aruba 's national airline
*/
statement : the remark on airline of dutch antilles express with fleet size over 4 is curacao second national carrier.
explain : the statement want to check a record in the table. we cannot find a record perfectly satisfied the statement, the most relevant row is row 5, which describes dutch antilles express airline, remarks is uracao second national carrier and fleet size is 4 not over 4.
The answer is : f_row([row 5])

/*
table caption : list of longest - serving soap opera actors.
col : actor | character | soap opera | years | duration
row 1 : tom jordon | charlie kelly | fair city | 1989- | 25 years
row 2 : tony tormey | paul brennan | fair city | 1989- | 25 years
row 3 : jim bartley | bela doyle | fair city | 1989- | 25 years
row 4 : sarah flood | suzanne halpin | fair city | 1989 - 2013 | 24 years
row 5 : pat nolan | barry o'hanlon | fair city | 1989 - 2011 | 22 years
row 6 : martina stanley | dolores molloy | fair city | 1992- | 22 years
row 7 : joan brosnan walsh | mags kelly | fair city | 1989 - 2009 | 20 years
row 8 : jean costello | rita doyle | fair city | 1989 - 2008 , 2010 | 19 years
row 9 : ciara o'callaghan | yvonne gleeson | fair city | 1991 - 2004 , 2008- | 19 years
row 10 : celia murphy | niamh cassidy | fair city | 1995- | 19 years
row 39 : tommy o'neill | john deegan | fair city | 2001- | 13 years
row 40 : seamus moran | mike gleeson | fair city | 1996 - 2008 | 12 years
row 41 : rebecca smith | annette daly | fair city | 1997 - 2009 | 12 years
row 42 : grace barry | mary - ann byrne | glenroe | 1990 - 2001 | 11 years
row 43 : gemma doorly | sarah o'leary | fair city | 2001 - 2011 | 10 years
*/
statement : seamus moran and rebecca smith were in soap operas for a duration of 12 years.
explain : the statement want to check seamus moran and rebecca smith in the table. row 40 describes seamus moran were in soap operas for a duration of 12 years. row 41 describes rebecca smith were in soap operas for a duration of 12 years
The answer is : f_row([row 40, row 41])

/*
table caption : jeep grand cherokee.
col : years | displacement | engine | power | torque
row 1 : 1999 - 2004 | 4.0l (242cid) | power tech i6 | - | 3000 rpm
row 2 : 1999 - 2004 | 4.7l (287cid) | powertech v8 | - | 3200 rpm
row 3 : 2002 - 2004 | 4.7l (287cid) | high output powertech v8 | - | -
row 4 : 1999 - 2001 | 3.1l diesel | 531 ohv diesel i5 | - | -
row 5 : 2002 - 2004 | 2.7l diesel | om647 diesel i5 | - | -
*/
statement : the jeep grand cherokee with the om647 diesel i5 had the third lowest numbered displacement.
explain : the statement want to check the om647 diesel i5 had third lowest numbered displacement. so we need first three low numbered displacement and all rows that power is om647 diesel i5.
The answer is : f_row([row 5, row 4, row 1])"""

SELECT_COLUMN_DEMO = """Use f_col() api to filter out useless columns in the table according to informations in the statement and the table.

/*
{
  "table_caption": "south wales derby",
  "columns": ["competition", "total matches", "cardiff win", "draw", "swansea win"],
  "table_column_priority": [
    ["competition", "league", "fa cup", "league cup"],
    ["total matches", "55", "2", "5"],
    ["cardiff win", "19", "0", "2"],
    ["draw", "16", "27", "0"],
    ["swansea win", "20", "2", "3"]
  ]
}
*/
statement : there are no cardiff wins that have a draw greater than 27.
similar words link to columns :
no cardiff wins -> cardiff win
a draw -> draw
column value link to columns :
27 -> draw
semantic sentence link to columns :
None
The answer is : f_col([cardiff win, draw])

/*
{
  "table_caption": "gambrinus liga",
  "columns": ["season", "champions", "runner - up", "third place", "top goalscorer", "club"],
  "table_column_priority": [
    ["season", "1993 - 94", "1994 - 95", "1995 - 96"],
    ["champions", "sparta prague (1)", "sparta prague (2)", "slavia prague (1)"],
    ["runner - up", "slavia prague", "slavia prague", "sigma olomouc"],
    ["third place", "baník ostrava", "fc brno", "baumit jablonec"],
    ["top goalscorer", "horst siegl (20)", "radek drulák (15)", "radek drulák (22)"],
    ["club", "sparta prague", "drnovice", "drnovice"]
  ]
}
*/
statement : the top goal scorer for the season 2010 - 2011 was david lafata.
similar words link to columns :
season 2010 - 2011 -> season
the top goal scorer -> top goalscorer
column value link to columns :
2010 - 2011 -> season
semantic sentence link to columns :
the top goal scorer for ... was david lafata -> top goalscorer
The answer is : f_col([season, top goalscorer])

/*
{
  "table_caption": "head of the river (queensland)",
  "columns": ["crew", "open 1st viii", "senior 2nd viii", "senior 3rd viii", "senior iv", "year 12 single scull", "year 11 single scull"],
  "table_column_priority": [
    ["crew", "2009", "2010", "2011"],
    ["open 1st viii", "stm", "splc", "stm"],
    ["senior 2nd viii", "sta", "som", "stu"],
    ["senior 3rd viii", "sta", "som", "stu"],
    ["senior iv", "som", "sth", "sta"],
    ["year 12 single scull", "stm", "splc", "stm"],
    ["year 11 single scull", "splc", "splc", "splc"]
  ]
}
*/
statement : the crew that had a senior 2nd viii of som and senior iv of stm was that of 2013.
similar words link to columns :
the crew -> crew
a senior 2nd viii of som -> senior 2nd viii
senior iv of stm -> senior iv
column value link to columns :
som -> senior 2nd viii
stm -> senior iv
semantic sentence link to columns :
None
The answer is : f_col([crew, senior 2nd viii, senior iv])

/*
{
  "table_caption": "2007 - 08 boston celtics season",
  "columns": ["game", "date", "team", "score", "high points", "high rebounds", "high assists", "location attendance", "record"],
  "table_column_priority": [
    ["game", "74", "75", "76"],
    ["date", "april 1", "april 2", "april 5"],
    ["team", "chicago", "indiana", "charlotte"],
    ["score", "106 - 92", "92 - 77", "101 - 78"],
    ["high points", "allen (22)", "garnett (20)", "powe (22)"],
    ["high rebounds", "perkins (9)", "garnett (11)", "powe (9)"],
    ["high assists", "rondo (10)", "rondo (6)", "rondo (5)"],
    ["location attendance", "united center 22225", "td banknorth garden 18624", "charlotte bobcats arena 19403"],
    ["record", "59 - 15", "60 - 15", "61 - 15"]
  ]
}
*/
statement : in game 74 against chicago , perkins had the most rebounds (9) and allen had the most points (22).
similar words link to columns :
the most rebounds -> high rebounds
the most points -> high points
in game 74 -> game
column value link to columns :
74 -> game
semantic sentence link to columns :
2007 - 08 boston celtics season in game 74 against chicago -> team
perkins had the most rebounds -> high rebounds
allen had the most points -> high points
The answer is : f_col([game, team, high points, high rebounds])

/*
{
  "table_caption": "dan hardy",
  "columns": ["res", "record", "opponent", "method", "event", "round", "time", "location"],
  "table_column_priority": [
    ["res", "win", "win", "loss"],
    ["record", "25 - 10 (1)", "24 - 10 (1)", "23 - 10 (1)"],
    ["opponent", "amir sadollah", "duane ludwig", "chris lytle"],
    ["method", "decision (unanimous)", "ko (punch and elbows)", "submission (guillotine choke)"],
    ["event", "ufc on fuel tv : struve vs miocic", "ufc 146", "ufc live : hardy vs lytle"],
    ["round", "3", "1", "5"],
    ["time", "5:00", "3:51", "4:16"],
    ["location", "nottingham , england", "las vegas , nevada , united states", "milwaukee , wisconsin , united states"]
  ]
}
*/
statement : the record of the match was a 10 - 3 (1) score , resulting in a win in round 5 with a time of 5:00 minutes.
similar words link to columns :
the record of the match was a 10 - 3 (1) score -> record
the record -> record
in round -> round
a time -> time
column value link to columns :
10 - 3 (1) -> record
5 -> round
5:00 minutes -> time
semantic sentence link to columns :
resulting in a win -> res
The answer is : f_col([res, record, round, time])

/*
{
  "table_caption": "list of largest airlines in central america & the caribbean",
  "columns": ["rank", "airline", "country", "fleet size", "remarks"],
  "table_column_priority": [
    ["rank", "1", "2", "3"],
    ["airline", "caribbean airlines", "liat", "cubana de aviaciã cubicn"],
    ["country", "trinidad and tobago", "antigua and barbuda", "cuba"],
    ["fleet size", "22", "17", "14"],
    ["remarks", "largest airline in the caribbean", "second largest airline in the caribbean", "operational since 1929"]
  ]
}
*/
statement : the remark on airline of dutch antilles express with fleet size over 4 is curacao second national carrier.
similar words link to columns :
the remark -> remarks
on airline -> airline
fleet size -> fleet size
column value link to columns :
dutch antilles -> country
4 -> fleet size
curacao second national carrier -> remarks
semantic sentence link to columns :
None
The answer is : f_col([airline, fleet size, remarks])

/*
{
  "table_caption": "cnbc prime 's the profit 200",
  "columns": ["year", "date", "driver", "team", "manufacturer", "laps", "-", "race time", "average speed (mph)"],
  "table_column_priority": [
    ["year", "1990", "1990", "1991"],
    ["date", "july 15", "october 14", "july 14"],
    ["driver", "tommy ellis", "rick mast", "kenny wallace"],
    ["team", "john jackson", "ag dillard motorsports", "rusty wallace racing"],
    ["manufacturer", "buick", "buick", "pontiac"],
    ["laps", "300", "250", "300"],
    ["-", "317.4 (510.805)", "264.5 (425.671)", "317.4 (510.805)"],
    ["race time", "3:41:58", "2:44:37", "2:54:38"],
    ["average speed (mph)", "85.797", "94.405", "109.093"]
  ]
}
*/
statemnet : on june 26th , 2010 kyle busch drove a total of 211.6 miles at an average speed of 110.673 miles per hour.
similar words link to columns :
drove -> driver
column value link to columns :
june 26th , 2010 -> date, year
a total of 211.6 miles -> -
semantic sentence link to columns :
kyle busch drove -> driver
an average speed of 110.673 miles per hour -> average speed (mph)
The answer is : f_col([year, date, driver, -, average speed (mph)])

/*
{
  "table_caption": "2000 ansett australia cup",
  "columns": ["home team", "home team score", "away team", "away team score", "ground", "crowd", "date"],
  "table_column_priority": [
    ["home team", "brisbane lions", "kangaroos", "richmond"],
    ["home team score", "13.6 (84)", "10.16 (76)", "11.16 (82)"],
    ["away team", "sydney", "richmond", "brisbane lions"],
    ["away team score", "17.10 (112)", "9.11 (65)", "15.9 (99)"],
    ["ground", "bundaberg rum stadium", "waverley park", "north hobart oval"],
    ["crowd", "8818", "16512", "4908"],
    ["date", "friday , 28 january", "friday , 28 january", "saturday , 5 february"]
  ]
}
*/
statement : sydney scored the same amount of points in the first game of the 2000 afl ansett australia cup as their opponent did in their second.
similar words link to columns :
scored -> away team score, home team score
column value link to columns :
sydney -> away team, home team
semantic sentence link to columns :
their opponent -> home team, away team
scored the same amount of points -> away team score, home team score
first game -> date
their second -> date
sydney scored -> home team, away team, home team score, away team score
The answer is : f_col([away team, home team, away team score, home team score, date])"""

GROUP_COLUMN_DEMO = """To tell the statement is true or false, we can first use f_group() to group the values in a column.

/*
col : rank | lane | athlete | time | country
row 1 : 1 | 6 | manjeet kaur (ind) | 52.17 | ind
row 2 : 2 | 5 | olga tereshkova (kaz) | 51.86 | kaz
row 3 : 3 | 4 | pinki pramanik (ind) | 53.06 | ind
row 4 : 4 | 1 | tang xiaoyin (chn) | 53.66 | chn
row 5 : 5 | 8 | marina maslyonko (kaz) | 53.99 | kaz
*/
Statement: there are one athlete from japan.
The existing columns are: rank, lane, athlete, time, country.
Explanation: the statement says the number of athletes from japan is one. Each row is about an athlete. We can group column "country" to group the athletes from the same country.
Therefore, the answer is: f_group(country).

/*
col : district | name | party | residence | first served
row 1 : district 1 | nelson albano | dem | vineland | 2006
row 2 : district 1 | robert andrzejczak | dem | middle twp. | 2013†
row 3 : district 2 | john f. amodeo | rep | margate | 2008
row 4 : district 2 | chris a. brown | rep | ventnor | 2012
row 5 : district 3 | john j. burzichelli | dem | paulsboro | 2002
*/
Statement: the number of districts that are democratic is 5.
The existing columns are: district, name, party, residence, first served.
Explanation: the statement says the number of districts that are democratic is 5. Each row is about a district. We can group the column "party" to group the districts from the same party.
Therefore, the answer is: f_group(party)."""

SORT_COLUMN_DEMO = """To tell the statement is true or false, we can first use f_sort() to sort the values in a column to get the order of the items. The order can be "large to small" or "small to large".

The column to sort should have these data types:
1. Numerical: the numerical strings that can be used in sort
2. DateType: the strings that describe a date, such as year, month, day
3. String: other strings

/*
col : position | club | played | points | wins | draws | losses | goals for | goals against | goal difference
row 1 : 1 | malaga cf | 42 | 79 | 22 | 13 | 7 | 72 | 47 | +25
row 10 : 10 | cp merida | 42 | 59 | 15 | 14 | 13 | 48 | 41 | +7
row 3 : 3 | cd numancia | 42 | 73 | 21 | 10 | 11 | 68 | 40 | +28
*/
Statement: cd numancia placed in the last position
The existing columns are: position, club, played, points, wins, draws, losses, goals for, goals against, goal difference.
Explanation: the statement wants to check cd numanica is in the last position. Each row is about a club. We need to know the order of position from last to front. There is a column for position and the column name is position. The datatype is Numerical.
Therefore, the answer is: f_sort(position), the order is "large to small".

/*
col : year | team | games | combined tackles | tackles | assisted tackles |
row 1 : 2004 | hou | 16 | 63 | 51 | 12 |
row 2 : 2005 | hou | 12 | 35 | 24 | 11 |
row 3 : 2006 | hou | 15 | 26 | 19 | 7 |
*/
Statement: in 2006 babin had the least amount of tackles
The existing columns are: year, team, games, combined tackles, tackles, assisted tackles.
Explanation: the statement wants to check babin had the least amount of tackles in 2006. Each row is about a year. We need to know the order of tackles from the least to the most. There is a column for tackles and the column name is tackles. The datatype is Numerical.
Therefore, the answer is: f_sort(tackles), the order is "small to large"."""

GENERAL_DEMO = """/*
table caption : 2008 sidecarcross world championship.
col : position | driver / passenger | equipment | bike no | points
row 1 : 1 | daniël willemsen / reto grütter | ktm - ayr | 1 | 531
row 2 : 2 | kristers sergis / kaspars stupelis | ktm - ayr | 3 | 434
row 3 : 3 | jan hendrickx / tim smeuninx | zabel - vmc | 2 | 421
row 4 : 4 | joris hendrickx / kaspars liepins | zabel - vmc | 8 | 394
row 5 : 5 | marco happich / meinrad schelbert | zabel - mefo | 7 | 317
*/
Statement: bike number 3 is the only one to use equipment ktm - ayr.
The anwser is: NO

/*
table caption : 1957 vfl season.
col : home team | home team score | away team | away team score | venue | crowd | date
row 1 : footscray | 6.6 (42) | north melbourne | 8.13 (61) | western oval | 13325 | 10 august 1957
row 2 : essendon | 10.15 (75) | south melbourne | 7.13 (55) | windy hill | 16000 | 10 august 1957
row 3 : st kilda | 1.5 (11) | melbourne | 6.13 (49) | junction oval | 17100 | 10 august 1957
row 4 : hawthorn | 14.19 (103) | geelong | 8.7 (55) | brunswick street oval | 12000 | 10 august 1957
row 5 : fitzroy | 8.14 (62) | collingwood | 8.13 (61) | glenferrie oval | 22000 | 10 august 1957
*/
Statement: collingwood was the away team playing at the brunswick street oval venue.
The anwser is: NO

/*
table caption : co - operative commonwealth federation (ontario section).
col : year of election | candidates elected | of seats available | of votes | % of popular vote
row 1 : 1934 | 1 | 90 | na | 7.0%
row 2 : 1937 | 0 | 90 | na | 5.6%
row 3 : 1943 | 34 | 90 | na | 31.7%
row 4 : 1945 | 8 | 90 | na | 22.4%
row 5 : 1948 | 21 | 90 | na | 27.0%
*/
Statement: the 1937 election had a % of popular vote that was 1.4% lower than that of the 1959 election.
The anwser is: NO

/*
table caption : 2003 pga championship.
col : place | player | country | score | to par
row 1 : 1 | shaun micheel | united states | 69 + 68 = 137 | - 3
row 2 : t2 | billy andrade | united states | 67 + 72 = 139 | - 1
row 3 : t2 | mike weir | canada | 68 + 71 = 139 | - 1
row 4 : 4 | rod pampling | australia | 66 + 74 = 140 | e
row 5 : t5 | chad campbell | united states | 69 + 72 = 141 | + 1
*/
Statement: phil mickelson was one of five players with + 1 to par , all of which had placed t5.
The anwser is: YES"""

_PLAN_DEMOS = {"add_column": PLAN_ADD_COLUMN_DEMO, "select_row": PLAN_SELECT_ROW_DEMO,
               "select_column": PLAN_SELECT_COLUMN_DEMO, "group_column": PLAN_GROUP_COLUMN_DEMO,
               "sort_column": PLAN_SORT_COLUMN_DEMO}


def _block(df: pd.DataFrame, caption: str | None, max_rows: int = 100) -> str:
    return "/*\n" + linearize(df, caption, max_rows) + "\n*/\n"


def _columns_line(df: pd.DataFrame) -> str:
    return "The existing columns are: " + ", ".join(df.columns) + ".\n"


def plan_prompt(state: ChainState) -> str:
    """DynamicPlan's prompt (official ``generate_prompt_for_next_step``): one demo per
    candidate operation, the complete example chains, the current table, the statement, the
    legal next operations and ``Function Chain: <chain so far> ->``. Generate at T=0 and stop
    at a blank line."""
    cands = state.candidates()
    prompt = "".join(_PLAN_DEMOS[op] + "\n\n" for op in cands if op != END)
    prompt += PLAN_FULL_DEMO_SIMPLE + "\n\n"
    prompt += _block(state.table, None)
    prompt += "Statement: " + state.statement + "\n"
    names = " or ".join(f"f_{op}()" if op != END else op for op in cands)
    prompt += (f"The next operation must be one of {names}.\n" if len(cands) > 1
               else f"The next operation must be {names}.\n")
    kept = state.kept_chain()
    return prompt + "Function Chain: " + (kept + " ->" if kept else "")


def parse_plan(response: str, candidates: Sequence[str]) -> str | None:
    """The first operation of the generated chain that is a legal candidate (official
    ``get_all_operation_names``: parts split at ``->``, each ``f_<name>(...)`` or ``<END>``);
    None when the chain names no candidate (the caller then ENDs, as the official code)."""
    for part in response.split("->"):
        part = part.strip()
        if part == END:
            name = END
        else:
            found = re.findall(r"f_(.*?)\(.*\)", part)
            if not found:
                continue
            name = found[0]
        if name in candidates:
            return name
    return None


def mask_digits(statement: str) -> str:
    """add_column masks the statement's digits (official ``re.sub(r"\\d+", "_", ...)``)."""
    return re.sub(r"\d+", "_", statement)


def add_column_prompt(state: ChainState) -> str:
    """add_column's prompt: its demos, the first 3 rows, the digit-masked statement, the
    existing columns, ``Explanation:`` (T=0)."""
    return (ADD_COLUMN_DEMO.rstrip() + "\n\n" + _block(state.table, state.caption, 3)
            + "Statement: " + mask_digits(state.statement) + "\n"
            + _columns_line(state.table) + "Explanation:")


def parse_add_column(response: str) -> tuple[str, list[str], str] | None:
    """(column name, the first 3 values, the reusable explanation ``We extract the value
    from … The value:``) from add_column's reply, or None (official ``add_column_func``)."""
    found = re.findall(r"f_add_column\(.*\)", response, re.DOTALL)
    if not found or "The value:" not in response:
        return None
    call = found[0].strip()
    name = call[call.index("(") + 1:call.index(")")].strip()
    values = [v.strip() for v in response.split("The value:")[-1].strip().split("|")]
    if not name or len(values) != 3:
        return None
    try:
        left = response.index("We extract the value from")
        right = response.index("The value:")
    except ValueError:
        return None
    if right < left:
        return None
    return name, values, response[left:right] + "The value:"


def add_column_row_prompt(state: ChainState, response: str, explanation: str,
                          row: int) -> str:
    """The per-row prompt for rows 4… (official): the first-3-rows header with the reply
    from its explanation on, then the one-row table and the reused explanation (1-based
    ``row`` of ``state.table``)."""
    table = as_table(state.table)
    if isinstance(row, bool) or not isinstance(row, int) or not 1 <= row <= len(table):
        raise ValueError(f"row must be in 1..{len(table)}, got {row!r}")
    left = response.index("We extract the value from")

    def head(df):
        return "/*\n" + linearize(df, state.caption, 3) + "\n*/\nExplanation: "

    return (head(table) + response[left:] + "\n\n" + head(table.iloc[[row - 1]])
            + explanation)


def parse_row_value(response: str) -> str:
    """A per-row value: the stripped reply up to its first ``|``."""
    text = response.strip()
    return text.split("|")[0].strip() if "|" in text else text


def select_row_prompt(state: ChainState) -> str:
    """f_row's prompt (the full table, ``statement :``, ``explain :``); 8 samples at T=0.5."""
    return (SELECT_ROW_DEMO.rstrip() + "\n\n" + _block(state.table, state.caption)
            + "statement : " + state.statement + "\n" + "explain :")


def parse_rows(response: str) -> tuple[str, ...] | None:
    """The selected rows as a sorted tuple of row numbers as text (``("2", "5")``), or
    ``("*",)``, from ``f_row([row 2, row 5])``; None without the call (official)."""
    found = re.findall(r"f_row\(\[(.*?)\]\)", response, re.DOTALL)
    if not found:
        return None
    parts = [p.strip().split(" ")[-1] for p in found[0].strip().split(", ")]
    return tuple(sorted(parts))


def _json_table(df: pd.DataFrame, caption: str | None) -> str:
    # official MyEncoder: indent=2, but each inner list on one line (NoIndent)
    cols = list(df.columns)
    per_col = [[c] + list(df[c]) for c in cols]
    lines = ["{"]
    if caption is not None:
        lines.append(f'  "table_caption": {json.dumps(caption, ensure_ascii=False)},')
    lines.append(f'  "columns": {json.dumps(cols, ensure_ascii=False)},')
    lines.append('  "table_column_priority": [')
    lines += [f"    {json.dumps(c, ensure_ascii=False)}" + ("," if k < len(per_col) - 1 else "")
              for k, c in enumerate(per_col)]
    lines += ["  ]", "}"]
    return "\n".join(lines)


def select_column_prompt(state: ChainState) -> str:
    """f_col's prompt: the table as JSON columns, ``statement : ….``, ``similar words link to
    columns :``; 8 samples at T=0.5."""
    table = as_table(state.table)
    return (SELECT_COLUMN_DEMO.rstrip() + "\n\n" + "/*\ntable = "
            + _json_table(table.head(100), state.caption) + "\n*/\n"
            + "statement : " + state.statement + ".\n" + "similar words link to columns :\n")


def parse_columns(response: str) -> tuple[str, ...] | None:
    """The column names of ``f_col([a, b])`` as a sorted tuple, or None (official)."""
    found = re.findall(r"f_col\(\[(.*?)\]\)", response, re.DOTALL)
    if not found:
        return None
    return tuple(sorted(p.strip() for p in found[0].strip().split(", ")))


def group_prompt(state: ChainState) -> str:
    """f_group's prompt: its demos, the first 5 rows, the statement, the columns (T=0)."""
    return (GROUP_COLUMN_DEMO.rstrip() + "\n\n" + _block(state.table, state.caption, 5)
            + "Statement: " + state.statement + "\n" + _columns_line(state.table)
            + "Explanation:")


def parse_group(response: str, columns: Sequence[str]) -> str | None:
    """The column of ``f_group(<col>)`` if it is in ``columns``, else None."""
    found = re.findall(r"f_group\(([^\)]*)\)", response, re.DOTALL)
    if not found:
        return None
    col = found[0].strip()
    return col if col in columns else None


def sort_prompt(state: ChainState) -> str:
    """f_sort's prompt: its demos, the first 3 rows (no caption, as official), the statement,
    the columns (T=0)."""
    return (SORT_COLUMN_DEMO.rstrip() + "\n\n" + _block(state.table, None, 3)
            + "Statement: " + state.statement + "\n" + _columns_line(state.table)
            + "Explanation:")


def parse_sort(response: str, columns: Sequence[str]) -> tuple[str, bool, str] | None:
    """(column, ascending, datatype) from ``The datatype is X. … f_sort(col), the order is
    "small to large".``; None if a part is missing, the order is not one of the two, or the
    column is unknown (official ``sort_column_func``)."""
    dtype = re.findall(r"The datatype is (\w*).", response, re.DOTALL)
    order = re.findall(r'the order is "(.*)"\.', response, re.DOTALL)
    col = re.findall(r"f_sort\((.*)\)", response, re.DOTALL)
    if not (dtype and order and col):
        return None
    order_s, col_s = order[0].strip(), col[0].strip()
    if order_s not in ("small to large", "large to small") or col_s not in columns:
        return None
    return col_s, order_s == "small to large", dtype[0].strip()


_INSTRUCTION = ("Here are the statement about the table and the task is to tell whether the "
                "statement is True or False.\nIf the statement is true, answer YES, and "
                "otherwise answer NO.\n")


def final_query_prompt(state: ChainState, use_demo: bool = True) -> str:
    """TabFact's final query (official ``simple_query``): instruction, the four demos, the
    final table, the group block if any, ``Statement: …``, ``The answer is:`` (T=0)."""
    prompt = _INSTRUCTION
    if use_demo:
        prompt += "\n" + GENERAL_DEMO + "\n\n" + _INSTRUCTION + "\n"
    prompt += "/*\n" + linearize(state.table, state.caption) + "\n*/\n"
    block = state.group_text()
    if block is not None:
        prompt += "/*\n" + block + "\n*/\n"
    return prompt + "Statement: " + state.statement + "\nThe answer is:"


def parse_answer(response: str) -> str | None:
    """"yes" / "no" from the reply's first word (true -> yes, false -> no), else None."""
    words = re.findall(r"[A-Za-z]+", response)
    if not words:
        return None
    w = words[0].lower()
    return {"yes": "yes", "true": "yes", "no": "no", "false": "no"}.get(w)
