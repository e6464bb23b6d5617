// A table as CSV (RFC 4180: comma-separated, fields with a comma, quote or
// line break quoted, quotes doubled), for File > Export table as CSV.
//
// The first line holds the columns' keys (the header's KeyRole, the JSON
// report's key, else the header's text); then a line per row in the model's
// order (a sorting proxy's order is the one shown). A cell is its number
// under NumberRole written as the shortest text that reads back as the same
// double, so the file holds the model's numbers, not the rounded text shown;
// a cell with no number is its text.
#pragma once

#include <QString>

class QAbstractItemModel;

namespace prof::gui {

QString table_csv(const QAbstractItemModel& model);
// One field, quoted when it has to be.
QString csv_field(const QString& text);

}  // namespace prof::gui
