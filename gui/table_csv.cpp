#include "table_csv.h"

#include <QAbstractItemModel>
#include <QLocale>
#include <QStringList>

#include "characteristics_panel.h"

namespace prof::gui {

QString csv_field(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')) &&
      !text.contains(QLatin1Char('\r')))
    return text;
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString table_csv(const QAbstractItemModel& model) {
  QString out;
  QStringList fields;
  for (int c = 0; c < model.columnCount(); ++c) {
    const QVariant key = model.headerData(c, Qt::Horizontal, CharacteristicsPanel::KeyRole);
    fields << csv_field(key.isValid() && !key.toString().isEmpty() ? key.toString()
                                                                   : model.headerData(c, Qt::Horizontal).toString());
  }
  out += fields.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (int r = 0; r < model.rowCount(); ++r) {
    fields.clear();
    for (int c = 0; c < model.columnCount(); ++c) {
      const QModelIndex index = model.index(r, c);
      const QVariant number = index.data(CharacteristicsPanel::NumberRole);
      const bool numeric = number.typeId() == QMetaType::Double || number.typeId() == QMetaType::Float ||
                           number.typeId() == QMetaType::Int || number.typeId() == QMetaType::LongLong ||
                           number.typeId() == QMetaType::ULongLong || number.typeId() == QMetaType::UInt;
      fields << csv_field(numeric ? QString::number(number.toDouble(), 'g', QLocale::FloatingPointShortest)
                                  : index.data(Qt::DisplayRole).toString());
    }
    out += fields.join(QLatin1Char(',')) + QLatin1Char('\n');
  }
  return out;
}

}  // namespace prof::gui
